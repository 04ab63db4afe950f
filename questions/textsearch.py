"""Bilingual text terms shared by search and rubric-concept matching.

English is split into words and lightly stemmed ("leaks", "leaking" → "leak") so
word forms match. Chinese has no spaces, so every run of CJK characters is
indexed as overlapping character bigrams ("显存泄漏" → 显存, 存泄, 泄漏). A query
run matches when most of its bigrams are present, which finds "显存…泄漏"
written with words in between, without a segmentation dictionary.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from dataclasses import dataclass

CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
TOKEN_RE = re.compile(rf"[{CJK}]+|[a-z0-9][a-z0-9_]*")
CJK_RUN_RE = re.compile(rf"[{CJK}]+")
MAX_TERM_LENGTH = 40
STOPWORDS = frozenset(
    "a an and are as at be by do does for from has have how in is it its of on or so that the this to was what "
    "when which who why will with you your".split()
)


def normalize(text: str) -> str:
    """NFKC folds full-width letters and punctuation, then lower-case."""
    return unicodedata.normalize("NFKC", text).lower()


def stem(word: str) -> str:
    """A deliberately small stemmer: index and query use the same one, so consistency beats linguistics."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            if suffix == "es" and not word[:-2].endswith(("s", "x", "ch", "sh", "z")):
                continue
            return word[: len(word) - len(suffix)] + keep
    return word


def cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def text_terms(text: str) -> set[str]:
    """Every index term in a text (English stems and CJK bigrams)."""
    terms: set[str] = set()
    for token in TOKEN_RE.findall(normalize(text)):
        if CJK_RUN_RE.fullmatch(token):
            terms.update(cjk_bigrams(token))
        elif token not in STOPWORDS:
            # snake_case API names are indexed whole and by part.
            terms.add(stem(token)[:MAX_TERM_LENGTH])
            if "_" in token:
                terms.update(stem(part) for part in token.split("_") if len(part) > 1 and part not in STOPWORDS)
    return terms


@dataclass(frozen=True)
class TermGroup:
    """Terms from one query word; a document matches the group when it has at least ``needed`` of them."""

    source: str
    terms: tuple[str, ...]
    needed: int


def parse_query(query: str) -> list[TermGroup]:
    groups: list[TermGroup] = []
    seen: set[tuple[str, ...]] = set()
    for token in TOKEN_RE.findall(normalize(query)):
        if CJK_RUN_RE.fullmatch(token):
            bigrams = tuple(dict.fromkeys(cjk_bigrams(token)))
            # Most bigrams must be present: the ones spanning a word boundary may not be.
            needed = len(bigrams) if len(bigrams) <= 2 else math.ceil(len(bigrams) * 2 / 3)
            group = TermGroup(token, bigrams, needed)
        elif token in STOPWORDS:
            continue
        else:
            group = TermGroup(token, (stem(token)[:MAX_TERM_LENGTH],), 1)
        if group.terms not in seen:
            seen.add(group.terms)
            groups.append(group)
    return groups[:12]


def highlight(text: str, groups: list[TermGroup]) -> str:
    """HTML-escaped ``text`` with query matches wrapped in <mark>."""
    if not groups:
        return html.escape(text)
    patterns = []
    for group in groups:
        if CJK_RUN_RE.fullmatch(group.source):
            patterns.extend(re.escape(t) for t in sorted(group.terms, key=len, reverse=True))
        else:
            patterns.append(rf"\b{re.escape(group.terms[0])}\w*")
    regex = re.compile("|".join(patterns), re.IGNORECASE)
    folded = unicodedata.normalize("NFKC", text)
    out, last = [], 0
    for match in regex.finditer(folded):
        out.append(html.escape(folded[last : match.start()]))
        out.append(f"<mark>{html.escape(match.group(0))}</mark>")
        last = match.end()
    out.append(html.escape(folded[last:]))
    return "".join(out)


def snippet(text: str, groups: list[TermGroup], width: int = 160) -> str:
    """A window of plain text around the first match (or the start), highlighted."""
    plain = re.sub(r"[`*_#>\[\]]", "", re.sub(r"```.*?```", " ", text, flags=re.S))
    plain = re.sub(r"\s+", " ", plain).strip()
    folded = normalize(plain)
    start = 0
    for group in groups:
        pos = folded.find(group.terms[0])
        if pos >= 0:
            start = max(0, pos - width // 3)
            break
    piece = plain[start : start + width]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(plain) else ""
    return prefix + highlight(piece, groups) + suffix

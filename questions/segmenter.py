"""Word boundaries in Chinese text, so a rubric term matches whole words and not the inside of another word.

Chinese has no spaces: "数据" is a substring of "元数据" and "对数" one of "对数据", yet neither is said
there. One jieba tokenizer, built once per process, cuts a text into words; its dictionary holds every
Chinese concept term of the bank's rubrics and of the labs' diagnosis rubrics (and ``EXTRA_WORDS``), so a
technical term stays one word and a synonym always lines up with word boundaries where it is meant.

The catalog's terms are not all there is: a question saved in the browser editor lives in the database,
and its rubric may name a term no file holds. ``vocabulary(terms)`` adds the rubric being scored to the
dictionary for as long as that answer is scored (a derived tokenizer, cached per set of new terms). So a
segmentation depends on the answer and the rubric it is scored against, never on which rubrics this process
happened to score before, and a term an author just added counts at once in every process.

Building it costs 0.7-2 s (jieba's dictionary, from its cache after the first process, then ~0.3 s to read
the rubrics); ``warm()`` pays that ahead of the first answer where a process serves users.
"""

from __future__ import annotations

import contextvars
import logging
import os
import re
import tempfile
import threading
import warnings
from collections import ChainMap, OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import yaml

with warnings.catch_warnings():
    # jieba 0.42.1 imports pkg_resources where setuptools still ships it; that import warns about its own
    # deprecation, and a test run that turns warnings into errors must not fail on a library's import.
    warnings.filterwarnings("ignore", message=".*pkg_resources.*")
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="jieba.*")
    import jieba

from questions.textsearch import CJK, normalize

BANK_DIR = Path(__file__).resolve().parent / "bank"
# Read as data, not imported: labs sits above questions, and its rubrics use the same matcher.
LAB_CATALOG_DIR = Path(__file__).resolve().parents[1] / "labs" / "catalog"
CJK_TERM_RE = re.compile(rf"[{CJK}]")
# What jieba can hold as one word: its blocks are runs of CJK, ASCII letters, digits and a few signs.
WORD_RE = re.compile(rf"^[{CJK}a-z0-9+#&._%\-]+$")
# Compounds that jieba's dictionary lacks and whose parts are rubric terms elsewhere: without them
# "元数据" cuts into 元/数据 and would earn "数据".
EXTRA_WORDS = ("元数据",)
# Longer terms are phrases ("检查点越频繁越好"): as one dictionary word each would swallow the shorter terms
# inside them ("检查点"), and their own edges fall on word boundaries anyway.
MAX_WORD_CJK = 4
# A rubric term's weight in the dictionary: that of a common word (数据 has ~5k, 对 ~185k), so the term wins
# over a rarer general word across its edge ("整个程序转换" cuts 整个程序/转换, not 整个/程序转换) and still
# loses to a frequent pair ("对数据" stays 对/数据 beside the term 对数).
TERM_FREQ = 30000
# One-character affixes that leave the word they attach to meaning what it meant: "多线程" says "线程",
# "可移植性" says "可移植", "激活值" says "激活", "就够了" says "就够". Negating and meaning-changing ones
# stay out on purpose: "非连续" does not say "连续", "非阻塞" not "阻塞", "元数据" not "数据".
PREFIXES = frozenset("多偏可自预重")
SUFFIXES = frozenset("性值量次形式了")
# Characters that make the next word its opposite, which jieba leaves standing alone when it lacks the
# compound ("非阻塞" cuts 非/阻塞): no boundary after them, so "阻塞" is not said there.
NEGATING_PREFIXES = frozenset("非无")
# The runs jieba segments one at a time (its own pattern, so the cuts are the same as cutting the whole text).
BLOCK_RE = jieba.re_han_default
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_lock = threading.Lock()
_tokenizer: jieba.Tokenizer | None = None


def _cache_dir() -> str:
    """Where jieba keeps its parsed dictionary between processes: a directory the service may write."""
    var_dir = os.environ.get("FAULTLINE_VAR_DIR")
    if var_dir and os.path.isdir(var_dir) and os.access(var_dir, os.W_OK):
        return var_dir
    return tempfile.gettempdir()


def _rubric_terms(rubric: Iterable[dict]) -> Iterator[str]:
    """The concept synonyms: names of things. Misconception patterns are left out, being mostly pieces of
    claims ("精度更高", "只需"): as dictionary words they would swallow the names inside them ("精度")."""
    for point in rubric or []:
        for group in point.get("concepts") or []:
            yield from (str(term) for term in group)


def _front_matter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---"):
        return {}
    head = text.split("\n---", 1)[0][3:]
    loaded = yaml.load(head, Loader=YAML_LOADER)
    return loaded if isinstance(loaded, dict) else {}


def dictionary_word(term: str) -> str | None:
    """The term as the dictionary holds it (folded as answers are), or None when it is no Chinese word."""
    folded = re.sub(r"\s+", "", normalize(str(term)))
    if "{{" not in folded and 0 < len(CJK_TERM_RE.findall(folded)) <= MAX_WORD_CJK and WORD_RE.match(folded):
        return folded
    return None


def catalog_terms() -> set[str]:
    """Every Chinese rubric term of the bank and of the labs' diagnoses, folded as answers are.

    A file that does not parse contributes nothing: the validators report it, the segmenter must not fail
    a user's answer over it. Terms with a ``{{ param }}`` placeholder are rendered per variant (numbers,
    names) and are left out."""
    terms: set[str] = set()
    sources = [(path, "rubric") for path in sorted(BANK_DIR.rglob("*.md"))]
    sources += [(path, "diagnosis") for path in sorted(LAB_CATALOG_DIR.glob("*/lab.yaml"))]
    for path, kind in sources:
        try:
            if kind == "rubric":
                rubric = _front_matter(path).get("rubric")
            else:
                rubric = (
                    (yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER) or {}).get("diagnosis") or {}
                ).get("rubric")
        except (OSError, yaml.YAMLError, AttributeError):
            continue
        for term in _rubric_terms(rubric if isinstance(rubric, list) else []):
            word = dictionary_word(term)
            if word:
                terms.add(word)
    return terms


# Tokenizers for rubrics with terms the catalog lacks, by their set of new words; a handful of rubrics
# are being edited or scored at any time, so a small cache keeps each one's tokenizer built once.
MAX_DERIVED = 32
_derived: OrderedDict[frozenset[str], jieba.Tokenizer] = OrderedDict()
# The words of the rubric being scored in this thread or task that the catalog's dictionary lacks.
_extra_words: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("extra_words", default=frozenset())


def _add_terms(built: jieba.Tokenizer, words: Iterable[str]) -> None:
    for word in sorted(words):
        built.add_word(word, max(built.FREQ.get(word, 0), TERM_FREQ))


def tokenizer() -> jieba.Tokenizer:
    """The tokenizer for the rubric in scope: the process's catalog tokenizer, built on first use under a
    lock (request threads may race for it), or one derived from it with the rubric's new words."""
    extra = _extra_words.get()
    base = _catalog_tokenizer()
    if not extra:
        return base
    with _lock:
        derived = _derived.get(extra)
        if derived is None:
            derived = jieba.Tokenizer()
            derived.tmp_dir = base.tmp_dir
            # The same words at the same weights as a tokenizer built from the catalog plus these words. The
            # catalog's half-million entries are shared, not copied (15 MB each): jieba writes the new words,
            # and the prefixes it notes for them, into the first map of the chain.
            derived.FREQ, derived.total, derived.initialized = ChainMap({}, base.FREQ), base.total, True
            _add_terms(derived, extra)
            _derived[extra] = derived
            while len(_derived) > MAX_DERIVED:
                _derived.popitem(last=False)
        else:
            _derived.move_to_end(extra)
    return derived


def _catalog_tokenizer() -> jieba.Tokenizer:
    global _tokenizer
    if _tokenizer is not None:
        return _tokenizer
    with _lock:
        if _tokenizer is None:
            jieba.setLogLevel(logging.WARNING)  # its "Building prefix dict" lines are not ours to print
            built = jieba.Tokenizer()
            built.tmp_dir = _cache_dir()
            built.initialize()
            _add_terms(built, {*catalog_terms(), *EXTRA_WORDS})
            _tokenizer = built
    return _tokenizer


@contextmanager
def vocabulary(terms: Iterable[str]) -> Iterator[None]:
    """Segment with ``terms`` (a rubric's concept synonyms) in the dictionary inside this block."""
    base = _catalog_tokenizer().FREQ
    # A word the catalog's dictionary already holds at a term's weight (or above) changes nothing.
    extra = frozenset(word for word in map(dictionary_word, terms) if word and base.get(word, 0) < TERM_FREQ)
    token = _extra_words.set(extra)
    try:
        yield
    finally:
        _extra_words.reset(token)


def warm() -> None:
    """Build the tokenizer now rather than inside the first answer that needs it."""
    boundaries("预热")


def boundaries(text: str) -> frozenset[int]:
    """Offsets in ``text`` where a word starts or ends. Dictionary words only (no HMM guessing of unknown
    words): an unknown run stays single characters, so a term next to it keeps its edges.

    jieba cuts each run of characters it segments (Chinese, letters, digits, a few signs) on its own and
    everything between runs into single characters; doing the same here lets each run's cuts be cached, so
    the sentences of an answer reuse what segmenting the whole answer found."""
    cuts = {0, len(text)}
    last = 0
    for block in BLOCK_RE.finditer(text):
        cuts.update(range(last, block.start() + 1))
        cuts.update(block.start() + k for k in _block_cuts(block.group(), _extra_words.get()))
        last = block.end()
    cuts.update(range(last, len(text) + 1))
    return frozenset(cuts)


@lru_cache(maxsize=65536)
def _block_cuts(block: str, extra: frozenset[str]) -> frozenset[int]:
    cuts = {0, len(block)}
    glued: set[int] = set()
    for word, start, end in tokenizer().tokenize(block, HMM=False):
        cuts.add(start)
        cuts.add(end)
        cuts.update(start + k for k in _compound_cuts(word, extra))
        if word in NEGATING_PREFIXES and end < len(block) and CJK_TERM_RE.match(block[end]):
            glued.add(end)
    return frozenset(cuts - glued)


@lru_cache(maxsize=16384)
def _compound_cuts(word: str, extra: frozenset[str]) -> tuple[int, ...]:
    """Where a word splits into words it still says: two words of two or more characters each ("残差连接"
    says "残差", "显存带宽" says "带宽", "静态计算图" says "计算图"), or a word and one of the affixes above.
    Any other split that leaves one character ("元数据" into 元/数据, "旧版本") makes a different word."""
    if len(word) < 3 or not all(CJK_TERM_RE.match(ch) for ch in word):
        return ()
    freq = tokenizer().FREQ
    cuts = {k for k in range(2, len(word) - 1) if freq.get(word[:k], 0) > 0 and freq.get(word[k:], 0) > 0}
    if word[0] in PREFIXES and freq.get(word[1:], 0) > 0:
        cuts.add(1)
    if word[-1] in SUFFIXES and freq.get(word[:-1], 0) > 0:
        cuts.add(len(word) - 1)
    return tuple(sorted(cuts))

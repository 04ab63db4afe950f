"""Which rubric concepts a free-text answer covers, in either language.

A concept is a list of synonyms. English synonyms match as stemmed word
sequences, so "learning rates" in an answer matches the synonym "learning
rate"; synonyms with code characters (``clip_grad_norm_``, ``torch.isfinite``) and Chinese synonyms match
as substrings of the normalised text. Deterministic, so a candidate can see
exactly why a point counted.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from questions.textsearch import CJK_RUN_RE, normalize, stem

WORD_RE = re.compile(r"[a-z0-9]+")
PLAIN_PHRASE_RE = re.compile(r"^[a-z0-9 \-]+$")


@dataclass(frozen=True)
class PointCoverage:
    key: str
    weight: int
    found: list[str]  # the synonym that matched, one per concept found
    missing: list[str]  # the first synonym of each concept not found
    fraction: float

    def as_dict(self) -> dict:
        return asdict(self)


class AnswerText:
    def __init__(self, text: str) -> None:
        self.folded = normalize(text)
        self.squashed = re.sub(r"\s+", "", self.folded)
        self.stems = " " + " ".join(stem(w) for w in WORD_RE.findall(self.folded)) + " "

    def contains(self, synonym: str) -> bool:
        term = normalize(synonym).strip()
        if not term:
            return False
        if CJK_RUN_RE.search(term):
            return re.sub(r"\s+", "", term) in self.squashed
        if PLAIN_PHRASE_RE.match(term):
            words = [stem(w) for w in WORD_RE.findall(term)]
            return f" {' '.join(words)} " in self.stems
        return term in self.folded


def point_coverage(answer: AnswerText, key: str, weight: int, concepts: list[list[str]]) -> PointCoverage:
    found, missing = [], []
    for synonyms in concepts:
        hit = next((s for s in synonyms if answer.contains(s)), None)
        if hit is None:
            missing.append(synonyms[0])
        else:
            found.append(hit)
    fraction = len(found) / len(concepts) if concepts else 0.0
    return PointCoverage(key=key, weight=weight, found=found, missing=missing, fraction=round(fraction, 3))


def answer_coverage(text: str, rubric: list[tuple[str, int, list[list[str]]]]) -> tuple[list[PointCoverage], int]:
    """Coverage of each rubric point and the weighted percentage over the whole rubric."""
    answer = AnswerText(text)
    points = [point_coverage(answer, key, weight, concepts) for key, weight, concepts in rubric]
    total = sum(p.weight for p in points)
    percent = round(100 * sum(p.weight * p.fraction for p in points) / total) if total else 0
    return points, percent

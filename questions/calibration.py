"""Calibration answers: how the rubric scorer must grade known answers to a question, as data.

Each question may ship ``questions/bank/<topic>/<slug>.calibration.yaml`` beside its Markdown file (format
in docs/question-format.md): answers of four kinds, in both languages, each with a band its score must
fall in. The question's own reference answers always take part as kind ``reference``. Answers are scored
with ``questions.concepts.answer_coverage`` on the full rubric (misconceptions included), the same call
the practice page and ``scoreanswer`` make, so a row in band here is a row in band for a candidate.

Kept free of Django imports, like ``questions.bankfile``, so the calibration test and the
``calibration`` management command share one loader.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from questions.bankfile import BANK_DIR, LANGS, YAML_LOADER, BankFileError, QuestionSpec, _yaml_where
from questions.concepts import answer_coverage

SUFFIX = ".calibration.yaml"
KINDS = ("good", "keywords", "misconception", "off-topic")
ENTRY_KEYS = frozenset({"kind", "lang", "text", "point"})
MISCONCEPTION_CEILING = 40  # the contradicted point keeps at most this share, in per cent


@dataclass(frozen=True)
class Band:
    """Where a score must fall: ``at_least`` or ``at_most`` per cent (of the whole rubric, or of one point)."""

    at_least: int | None = None
    at_most: int | None = None
    on_point: bool = False  # the score is that of the answer's rubric point, not of the whole rubric

    def holds(self, score: int) -> bool:
        return (self.at_least is None or score >= self.at_least) and (self.at_most is None or score <= self.at_most)

    def __str__(self) -> str:
        bound = f">= {self.at_least}" if self.at_least is not None else f"<= {self.at_most}"
        return f"point {bound}" if self.on_point else bound


# Fixed by kind (issue 13), so an author cannot widen a band to make a weak rubric pass.
BANDS: dict[str, Band] = {
    "reference": Band(at_least=85),
    "good": Band(at_least=85),
    "keywords": Band(at_most=30),
    "misconception": Band(at_most=MISCONCEPTION_CEILING, on_point=True),
    "off-topic": Band(at_most=10),
}


@dataclass(frozen=True)
class CalibrationAnswer:
    index: int | None  # place in the file's ``answers`` list; None for the question's reference answer
    kind: str
    lang: str
    text: str
    point: str | None = None  # misconception answers: the rubric point they contradict


@dataclass(frozen=True)
class CalibrationFile:
    path: Path
    slug: str
    answers: list[CalibrationAnswer]


@dataclass(frozen=True)
class CalibrationRow:
    slug: str
    kind: str
    lang: str
    point: str | None
    index: int | None
    score: int  # per cent of the rubric, or of ``point`` for a misconception answer
    band: str
    ok: bool
    misconception_fired: bool  # misconception rows: one of ``point``'s misconceptions fired
    contradicted: list[str]  # every point whose misconception fired, whatever the kind

    def as_dict(self) -> dict:
        return asdict(self)


def calibration_path(spec: QuestionSpec) -> Path:
    return spec.path.with_name(spec.slug + SUFFIX)


def iter_calibration_files(bank_dir: Path = BANK_DIR) -> list[Path]:
    return sorted(p for p in bank_dir.rglob("*" + SUFFIX) if p.is_file())


def slug_of(path: Path) -> str:
    return path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.stem


def parse_calibration(path: Path, specs: dict[str, QuestionSpec]) -> CalibrationFile:
    """Read and check one calibration file against its question (looked up by slug in ``specs``);
    raise BankFileError naming the file, the entry (``answers[i]``) and the field on the first problem."""
    slug = slug_of(path)
    if not path.name.endswith(SUFFIX):
        raise BankFileError(path, "file name", f"must be <question-slug>{SUFFIX}")
    spec = specs.get(slug)
    if spec is None:
        raise BankFileError(path, "file name", f"no question with slug {slug!r} in the bank")
    if path.parent.name != spec.topic:
        raise BankFileError(path, "file name", f"must lie beside its question, in folder {spec.topic!r}")
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except UnicodeDecodeError as exc:
        raise BankFileError(path, "file", "not UTF-8 text") from exc
    except yaml.YAMLError as exc:
        raise BankFileError(path, _yaml_where(exc), "not valid YAML") from exc
    if not isinstance(raw, dict):
        raise BankFileError(path, "top level", "must be a mapping with one key, answers")
    unknown = sorted(str(k) for k in raw if k != "answers")
    if unknown:
        raise BankFileError(path, unknown[0], "unknown key; the only top-level key is answers")
    entries = raw.get("answers")
    if not isinstance(entries, list) or not entries:
        raise BankFileError(path, "answers", "must be a non-empty list of answers")
    points = [p.key for p in spec.rubric]
    answers = [_entry(path, i, item, points) for i, item in enumerate(entries)]
    for lang in LANGS:
        for kind in KINDS:
            if not any(a.kind == kind and a.lang == lang for a in answers):
                raise BankFileError(path, "answers", f"needs at least one {kind!r} answer with lang {lang!r}")
    return CalibrationFile(path=path, slug=slug, answers=answers)


def _entry(path: Path, index: int, raw: object, points: list[str]) -> CalibrationAnswer:
    where = f"answers[{index}]"
    if not isinstance(raw, dict):
        raise BankFileError(path, where, "must be a mapping with kind, lang and text")
    unknown = sorted(str(k) for k in raw if k not in ENTRY_KEYS)
    if unknown:
        raise BankFileError(path, f"{where}.{unknown[0]}", f"unknown key; allowed: {', '.join(sorted(ENTRY_KEYS))}")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise BankFileError(
            path,
            f"{where}.kind",
            f"must be one of {', '.join(KINDS)}, got {kind!r} (references come from the question)",
        )
    lang = raw.get("lang")
    if lang not in LANGS:
        raise BankFileError(path, f"{where}.lang", f"must be one of {', '.join(LANGS)}, got {lang!r}")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BankFileError(path, f"{where}.text", "is missing or empty")
    point = raw.get("point")
    if kind == "misconception":
        if point is None:
            raise BankFileError(
                path, f"{where}.point", "a misconception answer must name the rubric point it contradicts"
            )
        if point not in points:
            raise BankFileError(path, f"{where}.point", f"unknown rubric point {point!r}; known: {', '.join(points)}")
    elif point is not None:
        raise BankFileError(path, f"{where}.point", f"only misconception answers name a point, not {kind!r} ones")
    return CalibrationAnswer(index=index, kind=kind, lang=lang, text=text.strip(), point=point)


def reference_answers(spec: QuestionSpec) -> list[CalibrationAnswer]:
    return [CalibrationAnswer(index=None, kind="reference", lang=lang, text=spec.answer[lang]) for lang in LANGS]


def score_answer(spec: QuestionSpec, answer: CalibrationAnswer) -> CalibrationRow:
    points, percent = answer_coverage(answer.text, [p.scoring() for p in spec.rubric])
    contradicted = [p.key for p in points if p.contradicted]
    band = BANDS[answer.kind]
    fired = False
    score = percent
    if answer.kind == "misconception":
        target = next(p for p in points if p.key == answer.point)
        score = round(100 * target.fraction)
        fired = bool(target.contradicted)
    # A misconception answer that lands low only because it misses the point's terms proves nothing
    # about the misconception: it must also fire one.
    ok = band.holds(score) and (fired or answer.kind != "misconception")
    return CalibrationRow(
        slug=spec.slug, kind=answer.kind, lang=answer.lang, point=answer.point, index=answer.index, score=score,
        band=str(band), ok=ok, misconception_fired=fired, contradicted=contradicted,
    )  # fmt: skip


@dataclass(frozen=True)
class DraftCalibration:
    """A question's calibration table as the editor shows it, against the rubric as it is being edited."""

    rows: list[CalibrationRow]
    file: Path | None  # the calibration file, relative to the bank folder; None when the question has none
    problem: str | None = None  # why the file could not be used with the question as edited

    @property
    def out_of_band(self) -> int:
        return sum(not row.ok for row in self.rows)


def calibrate_draft(spec: QuestionSpec, bank_dir: Path = BANK_DIR) -> DraftCalibration:
    """Score the question's reference answers and its calibration file (found by slug, wherever it lies)
    against ``spec``, the question as the editor has it now. A file that no longer fits the edited question
    (a misconception answer naming a point the author removed, a file left in the old topic's folder) is
    reported, and the reference answers are still scored."""
    found = [path for path in iter_calibration_files(bank_dir) if slug_of(path) == spec.slug]
    if not found:
        return DraftCalibration(rows=score_question(spec, None), file=None)
    path = found[0]
    try:
        calibration = parse_calibration(path, {spec.slug: spec})
    except BankFileError as exc:
        return DraftCalibration(
            rows=score_question(spec, None), file=path.relative_to(bank_dir), problem=f"{exc.where}: {exc.problem}"
        )
    return DraftCalibration(rows=score_question(spec, calibration), file=path.relative_to(bank_dir))


def score_question(spec: QuestionSpec, calibration: CalibrationFile | None) -> list[CalibrationRow]:
    """Rows for the question's reference answers, then for each answer of its calibration file, in order."""
    answers = reference_answers(spec) + (calibration.answers if calibration else [])
    return [score_answer(spec, answer) for answer in answers]

"""Questions written in the browser: the editor's fields ↔ the Markdown file ``loadbank`` reads, the rubric
check, saved versions with history, and export.

The file is the contract. The editor's fields are turned into the file's text and parsed with the bank's
own parser (``questions.bankfile.parse_question_text``); a save keeps that text as a ``QuestionVersion`` and
applies it to the bank through ``questions.loader.apply_authored_question``, the code path of ``loadbank``.
Export hands back the saved text unchanged, so a round trip is the identity on the text.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.db import IntegrityError, transaction
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _

from authoring import audit
from authoring.models import AuthoringEvent, QuestionVersion
from questions.bankfile import (
    BANK_DIR,
    LANGS,
    LOOKS_LIKE_HEADING_RE,
    REFERENCE_FIELDS,
    YAML_LOADER,
    BankFileError,
    QuestionSpec,
    parse_question_text,
)
from questions.concepts import answer_coverage, point_report
from questions.loader import (
    AuthoredQuestionError,
    apply_authored_question,
    authored_question_problems,
    file_hash,
    text_hash,
)
from questions.models import Question, Topic
from questions.rendering import render_markdown

SUBJECT = AuthoringEvent.Subject.QUESTION
MAX_FILE_BYTES = 200_000
MAX_SAMPLES = 5
MAX_SAMPLE_CHARS = 20_000
SECTION_FIELDS = tuple(f"{kind}.{lang}" for lang in LANGS for kind in ("prompt", "answer"))
RESERVED_SLUGS = {"new", "import", "api"}  # page names under /author/questions/


class QuestionRefused(Exception):
    """A save, import or export was refused; ``errors`` maps a form field ("" for the whole file) to why."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{where or 'file'}: {problem}" for where, problem in errors.items()))


# ---- fields ↔ file text ------------------------------------------------------------------------------------
# The fields are plain JSON: slug, topic, difficulty, tags, source_document, source_number, related_questions,
# references [{title, section?, version?, url?}], title/prompt/answer {en, zh}, rubric [{key, weight, en, zh,
# concepts [[…]], misconceptions [{pattern, en, zh, penalty}]}]. Numbers may still be the strings a form sent:
# the parser, not the form, says what is wrong.


def spec_to_fields(spec: QuestionSpec) -> dict:
    return {
        "slug": spec.slug,
        "topic": spec.topic,
        "difficulty": spec.difficulty,
        "tags": list(spec.tags),
        "source_document": spec.source_document,
        "source_number": spec.source_number,
        "related_questions": list(spec.related_questions),
        "references": [dict(reference) for reference in spec.references],
        "title": dict(spec.title),
        "prompt": dict(spec.prompt),
        "answer": dict(spec.answer),
        "rubric": [
            {
                "key": point.key,
                "weight": point.weight,
                "en": point.text["en"],
                "zh": point.text["zh"],
                "concepts": [list(group) for group in point.concepts],
                "misconceptions": [
                    {
                        "pattern": [list(g) for g in m.pattern],
                        "en": m.explanation["en"],
                        "zh": m.explanation["zh"],
                        "penalty": m.penalty,
                    }
                    for m in point.misconceptions
                ],  # fmt: skip
            }
            for point in spec.rubric
        ],
    }


def question_to_fields(question: Question) -> dict:
    """The fields from the database, for a question whose file is not at hand (moved, or written elsewhere)."""
    return {
        "slug": question.slug,
        "topic": question.topic.slug,
        "difficulty": question.difficulty,
        "tags": [tag.slug for tag in question.tags.all()],
        "source_document": question.source_document,
        "source_number": question.source_number,
        "related_questions": sorted(q.slug for q in question.related_questions.all()),
        "references": [dict(reference) for reference in question.references or []],
        **{
            name: {lang: getattr(question, f"{name}_{lang}") for lang in LANGS}
            for name in ("title", "prompt", "answer")
        },
        "rubric": [
            {
                "key": p.key,
                "weight": p.weight,
                "en": p.text_en,
                "zh": p.text_zh,
                "concepts": p.concepts,
                "misconceptions": [dict(m) for m in p.misconceptions],
            }
            for p in question.rubric.all()
        ],  # fmt: skip
    }


def empty_fields() -> dict:
    blank = {lang: "" for lang in LANGS}
    point = {"key": "", "weight": 1, "en": "", "zh": "", "concepts": [], "misconceptions": []}
    return {
        "slug": "", "topic": "", "difficulty": 3, "tags": [], "source_document": "", "source_number": "",
        "related_questions": [], "references": [], "title": dict(blank), "prompt": dict(blank), "answer": dict(blank),
        "rubric": [dict(point) for _ in range(3)],
    }  # fmt: skip


def fields_to_text(fields: dict) -> str:
    """The Markdown file for the fields, laid out as the bank's files are (so most bank files come back
    byte for byte)."""
    lines = ["---", f"slug: {_scalar(fields.get('slug', ''))}", f"topic: {_scalar(fields.get('topic', ''))}"]
    lines.append(f"difficulty: {_number(fields.get('difficulty'))}")
    lines.append(f"tags: {_flow(fields.get('tags', []))}")
    lines += ["source:", f"  document: {_scalar(fields.get('source_document', ''))}"]
    lines.append(f"  number: {_quoted(str(fields.get('source_number', '')))}")
    lines.append(f"related_questions: {_flow(fields.get('related_questions', []))}")
    references = fields.get("references", [])
    if references:
        # One flow mapping a line, every value quoted, fields in the format's order: as the bank writes them.
        lines.append("references:")
        for reference in references:
            parts = [f"{name}: {_quoted(str(reference[name]))}" for name in REFERENCE_FIELDS if name in reference]
            lines.append("  - {" + ", ".join(parts) + "}")
    lines.append("title:")
    lines += [f"  {lang}: {_scalar(fields.get('title', {}).get(lang, ''))}" for lang in LANGS]
    lines.append("rubric:")
    for point in fields.get("rubric", []):
        lines.append(f"  - key: {_scalar(point.get('key', ''))}")
        lines.append(f"    weight: {_number(point.get('weight'))}")
        lines += [f"    {lang}: {_scalar(point.get(lang, ''))}" for lang in LANGS]
        lines.append("    concepts:")
        lines += [f"      - {_flow(group, synonyms=True)}" for group in point.get("concepts", [])]
        misconceptions = point.get("misconceptions", [])
        if misconceptions:
            lines.append("    misconceptions:")
        for wrong in misconceptions:
            pattern = ", ".join(_flow(group, synonyms=True) for group in wrong.get("pattern", []))
            lines.append(f"      - pattern: [{pattern}]")
            lines += [f"        {lang}: {_scalar(wrong.get(lang, ''))}" for lang in LANGS]
            penalty = wrong.get("penalty", 1.0)
            if not _is_default_penalty(penalty):
                lines.append(f"        penalty: {_number(penalty, real=True)}")
    lines.append("---")
    for name in SECTION_FIELDS:
        kind, lang = name.split(".")
        lines += ["", f"## {kind}:{lang}", str(fields.get(kind, {}).get(lang, "")).strip()]
    return "\n".join(lines) + "\n"


def _is_default_penalty(value: object) -> bool:
    """The format's default (1) is left out, as the bank's files leave it out."""
    if value in ("", None):
        return True
    try:
        return float(value) == 1.0
    except (TypeError, ValueError):
        return False


def _loads(text: str) -> object:
    try:
        return yaml.load(text, Loader=YAML_LOADER)
    except yaml.YAMLError:
        return None


def _quoted(value: str) -> str:
    # A JSON string is a YAML double-quoted scalar.
    return json.dumps(value, ensure_ascii=False)


def _scalar(value: object) -> str:
    text = str(value)
    if text and text == text.strip() and "\n" not in text and _loads(f"k: {text}") == {"k": text}:
        return text
    return _quoted(text)


def _number(value: object, real: bool = False) -> str:
    """An integer (or, with ``real``, a number) as itself; anything else quoted, so the parser names it."""
    if isinstance(value, bool):
        return _quoted(str(value))
    if isinstance(value, int) or (real and isinstance(value, float)):
        return repr(value)
    text = str(value if value is not None else "").strip()
    if re.fullmatch(r"-?\d+", text) or (real and re.fullmatch(r"-?\d+(\.\d+)?", text)):
        return text
    return _quoted(text)


def _flow(items: list, synonyms: bool = False) -> str:
    """``[a, b]``; an item stays bare when YAML reads it back as itself (for synonyms, as the parser's
    ``str()`` of it: ``65504`` is read as an int and becomes "65504" again)."""
    out = []
    for item in items:
        text = str(item)
        read = _loads(f"[{text}]") if text and text == text.strip() and "\n" not in text else None
        bare = isinstance(read, list) and len(read) == 1 and (str(read[0]) if synonyms else read[0]) == text
        if bare and synonyms and not isinstance(read[0], str) and str(read[0]).strip() != text:
            bare = False
        out.append(text if bare else _quoted(text))
    return "[" + ", ".join(out) + "]"


def file_path_for(slug: str, topic: str) -> Path:
    """Where the file lies in the bank (questions/bank/<topic>/<slug>.md), relative to the bank folder: the
    parser checks the slug and topic against it, and its messages name it."""
    folder = topic if re.fullmatch(r"[a-z0-9-]+", topic or "") else "bank"
    return Path(folder) / f"{slug}.md"


def topic_slugs() -> set[str]:
    return set(Topic.objects.values_list("slug", flat=True))


def parse_text(text: str, path: Path) -> QuestionSpec:
    """The bank's parser on text, as if the file lay at ``path``; raises BankFileError."""
    return parse_question_text(text, path, topic_slugs())


# ---- checking the fields -----------------------------------------------------------------------------------


@dataclass
class CheckResult:
    text: str
    path: Path
    spec: QuestionSpec | None = None
    errors: dict[str, str] = field(default_factory=dict)  # form field ("" = the file as a whole) → problem
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.errors


def check_fields(fields: dict) -> CheckResult:
    """Turn the fields into the file, parse it as loadbank would, and check it against the other questions."""
    text = fields_to_text(fields)
    path = file_path_for(str(fields.get("slug", "")), str(fields.get("topic", "")))
    result = CheckResult(text=text, path=path)
    try:
        result.spec = parse_text(text, path)
    except BankFileError as exc:
        result.errors[field_for(exc.where, fields)] = f"{exc.path}: {exc.where}: {exc.problem}"
        return result
    errors, result.warnings = authored_question_problems(result.spec)
    result.errors.update({field_for(where, fields): f"{path}: {where}: {problem}" for where, problem in errors.items()})
    return result


def field_for(where: str, fields: dict | None = None) -> str:
    """The form field a parser message names: form fields are named as the parser names places
    ("title.en", "rubric[2].concepts"), list items collapse onto their list, a line onto its section."""
    if where.startswith("section "):
        return where.removeprefix("section ").replace(":", ".")
    line = re.fullmatch(r"line (\d+)(?:, column \d+)?", where)
    if line:
        return _section_at(fields or {}, int(line.group(1)))
    where = re.sub(r"^(tags|related_questions)\[\d+\]$", r"\1", where)
    where = re.sub(r"^references\[\d+\](\.\w+)?$", "references", where)
    where = re.sub(r"\.(concepts|pattern)\[\d+\]$", r".\1", where)
    return {"source": "source.document", "title": "title.en", "front matter": "", "body": "", "file": ""}.get(
        where, where
    )


def _section_text(fields: dict, name: str) -> str:
    kind, lang = name.split(".")
    return str(fields.get(kind, {}).get(lang, "")).strip()


def _section_at(fields: dict, number: int) -> str:
    """The section (``prompt.en``…) whose text holds line ``number`` of the file made from ``fields``, or ""
    for the front matter. A complaint about a heading this module wrote (the real one now "appears twice")
    is the fault of the section where the author typed a heading-like line."""
    lines = fields_to_text(fields).splitlines()
    row = next(i for i in range(1, len(lines)) if lines[i] == "---") + 1  # the closing line, counted from 1
    if number <= row:
        return ""
    for name in SECTION_FIELDS:
        heading = row + 2  # a blank line, then the heading
        last = heading + max(1, len(_section_text(fields, name).splitlines()))
        if heading < number <= last:
            return name
        if number == heading:
            typed = [
                n
                for n in SECTION_FIELDS
                if any(map(LOOKS_LIKE_HEADING_RE.match, _section_text(fields, n).splitlines()))
            ]
            return typed[0] if typed else name
        row = last
    return ""


def previews(fields: dict) -> dict[str, str]:
    """Prompt and answer in both languages as candidates will see them (the bank's sanitised rendering)."""
    return {
        name: render_markdown(str(fields.get(name.split(".")[0], {}).get(name.split(".")[1], "")))
        for name in SECTION_FIELDS
    }


# ---- rubric check ------------------------------------------------------------------------------------------


def _scoring_rubric(fields: dict, spec: QuestionSpec | None) -> list[tuple[tuple, dict[str, str]]]:
    """(point as answer_coverage takes it, its text per language). From the parsed file when it parses;
    otherwise from the fields as far as they make sense, so the check keeps working while a field elsewhere
    is still wrong."""
    if spec is not None:
        return [(point.scoring(), point.text) for point in spec.rubric]
    rubric = []
    for i, point in enumerate(fields.get("rubric", [])):
        concepts = [[str(s).strip() for s in group if str(s).strip()] for group in point.get("concepts", [])]
        concepts = [group for group in concepts if group]
        if not concepts:
            continue
        try:
            weight = max(1, min(5, int(point.get("weight"))))
        except (TypeError, ValueError):
            weight = 1
        misconceptions = []
        for wrong in point.get("misconceptions", []):
            pattern = [[str(s).strip() for s in g if str(s).strip()] for g in wrong.get("pattern", [])]
            if len(pattern) >= 2 and all(pattern):
                try:
                    penalty = float(wrong.get("penalty") or 1.0)
                except (TypeError, ValueError):
                    penalty = 1.0
                misconceptions.append(
                    {"pattern": pattern, "en": wrong.get("en", ""), "zh": wrong.get("zh", ""), "penalty": penalty}
                )
        key = str(point.get("key") or f"point-{i + 1}")
        rubric.append(((key, weight, concepts, misconceptions), {lang: point.get(lang) or key for lang in LANGS}))
    return rubric


def score_answer(text: str, rubric: list[tuple[tuple, dict[str, str]]], lang: str) -> dict:
    """One answer against the rubric, as the practice page and ``manage.py scoreanswer`` score it."""
    points, percent = answer_coverage(text, [scoring for scoring, _texts in rubric])
    labels = [texts[lang] for _scoring, texts in rubric]
    return {
        "score": percent,
        "points": [point_report(p.as_dict(), label) for p, label in zip(points, labels, strict=True)],
    }


def rubric_check(fields: dict, spec: QuestionSpec | None, samples: list[str], lang: str) -> list[dict]:
    """The reference answer in each language, then each sample answer, scored point by point."""
    rubric = _scoring_rubric(fields, spec)
    if not rubric:
        return []
    names = {"en": _("Reference answer (English)"), "zh": _("Reference answer (Chinese)")}
    results = []
    for answer_lang in LANGS:
        text = str(fields.get("answer", {}).get(answer_lang, ""))
        if text.strip():
            results.append({"name": names[answer_lang], **score_answer(text, rubric, answer_lang)})
    for i, sample in enumerate(samples[:MAX_SAMPLES]):
        if sample.strip():
            name = _("Sample answer %(number)s") % {"number": i + 1}
            results.append({"name": name, "sample": True, **score_answer(sample, rubric, lang)})
    return results


# ---- what candidates see now, versions, history ------------------------------------------------------------


def latest_version(slug: str) -> QuestionVersion | None:
    return QuestionVersion.objects.filter(slug=slug).select_related("created_by").order_by("-number").first()


def shows_latest_version(question: Question, latest: QuestionVersion | None) -> bool:
    """Does the bank show the latest saved version? Not when loadbank has applied a changed file since."""
    return (
        latest is not None
        and question.origin == Question.Origin.BROWSER
        and question.content_hash == latest.content_hash
    )


def current_text(question: Question) -> tuple[str, str]:
    """The file of the question candidates see now, and where it came from: "version", "bank file" or
    "database" (rebuilt from the bank's rows when neither a version nor the file matches them)."""
    latest = latest_version(question.slug)
    if shows_latest_version(question, latest):
        return latest.text, "version"
    path = BANK_DIR / question.file_path
    if question.origin == Question.Origin.BANK and path.is_file() and file_hash(path) == question.content_hash:
        return path.read_text(encoding="utf-8"), "bank file"
    return fields_to_text(question_to_fields(question)), "database"


def state_token(question: Question | None) -> str:
    """What the editor was opened on; a save from an older state is refused rather than overwriting. The
    latest version's number is part of it: a save that changed only the sample answers leaves the file
    (and its hash) as it was."""
    if question is None:
        return ""
    latest = latest_version(question.slug)
    return f"{question.content_hash}:{latest.number if latest else 0}"


def clean_samples(samples: list[str]) -> list[str]:
    """The sample answers worth keeping, in order: blank ones dropped; refused when too many or too long."""
    kept = [sample.replace("\r\n", "\n").strip() for sample in samples if sample.strip()]
    if len(kept) > MAX_SAMPLES:
        raise QuestionRefused(
            {"sample": _("At most %(max)s sample answers are kept; remove %(extra)s.")
             % {"max": MAX_SAMPLES, "extra": len(kept) - MAX_SAMPLES}}
        )  # fmt: skip
    for number, sample in enumerate(kept, start=1):
        if len(sample) > MAX_SAMPLE_CHARS:
            raise QuestionRefused(
                {"sample": _("Sample answer %(number)s has %(length)s characters; at most %(max)s are kept.")
                 % {"number": number, "length": len(sample), "max": MAX_SAMPLE_CHARS}}
            )  # fmt: skip
    return kept


def saved_samples(slug: str) -> list[str]:
    """The sample answers of the latest version: what the editor opens with."""
    latest = latest_version(slug)
    return list(latest.sample_answers) if latest else []


@transaction.atomic
def save_fields(
    user, fields: dict, *, editing: str | None, base: str | None, samples: list[str] | None = None
) -> QuestionVersion:
    """Save the editor's fields (and sample answers, kept with the version) as a new version and make it the
    question candidates see."""
    kept = clean_samples(samples) if samples is not None else None
    result = check_fields(fields)
    if not result.ok:
        raise QuestionRefused(result.errors)
    return save_text(user, result.text, result.spec, editing=editing, base=base, samples=kept)


@transaction.atomic
def save_text(
    user, text: str, spec: QuestionSpec, *, editing: str | None, base: str | None, imported_from: str = "",
    samples: list[str] | None = None,
) -> QuestionVersion:  # fmt: skip
    """Keep ``text`` (already parsed into ``spec``) as the next version of its question and apply it to the
    bank. ``editing`` is the slug the editor was opened on (None for a new question); ``base`` the state
    token it was opened on (None: no check, as for an uploaded file). ``samples`` are the sample answers to
    keep with the version (None: those of the latest version carry over, as for an uploaded file, which has
    no place for them). A save that changes only the samples makes a version of the same file, which is not
    applied again."""
    slug = spec.slug
    question = Question.objects.select_for_update().filter(slug=slug).first()
    if editing is not None and slug != editing:
        raise QuestionRefused(
            {
                "slug": _(
                    "The slug names the question and cannot change. "
                    "To copy it under another slug, start a new question from it."
                )
            }
        )
    if (
        editing is None
        and base is not None
        and (question is not None or QuestionVersion.objects.filter(slug=slug).exists())
    ):
        raise QuestionRefused({"slug": _("A question with the slug %(slug)s already exists.") % {"slug": slug}})
    if question is None and slug in RESERVED_SLUGS:
        raise QuestionRefused({"slug": _("%(slug)s is reserved for a page; choose another slug.") % {"slug": slug}})
    if base is not None and question is not None and state_token(question) != base:
        raise QuestionRefused({"": _changed_since_message(question, base)})
    latest = latest_version(slug)
    kept = list(latest.sample_answers) if latest else []
    samples = kept if samples is None else samples
    if question is not None:
        before, origin = current_text(question)
        if _same_question(before, spec):
            if samples == kept:
                raise QuestionRefused({"": _("Nothing changed: candidates already see exactly this file.")})
            version = _new_version(user, question, slug, before, latest, samples)
            audit.record(
                AuthoringEvent.Kind.EDITED, SUBJECT, slug, user,
                version=version.number, applied=False, samples=len(samples),
            )  # fmt: skip
            return version
        if origin != "version" and (latest is None or before != latest.text):
            # Candidates see the bank file (never edited here, or loadbank applied a changed file since):
            # keep that state as a version first, so history and diffs show what this save changed.
            latest = _new_version(user, question, slug, before, latest, kept)
            audit.record(AuthoringEvent.Kind.IMPORTED, SUBJECT, slug, user, version=latest.number, source=origin)
    try:
        applied = apply_authored_question(spec, text)
    except AuthoredQuestionError as exc:
        raise QuestionRefused({field_for(w): f"{w}: {p}" for w, p in exc.errors.items()}) from exc
    except IntegrityError:  # another author created this slug a moment ago
        raise QuestionRefused(
            {"slug": _("A question with the slug %(slug)s was created a moment ago by someone else.") % {"slug": slug}}
        ) from None
    version = _new_version(user, applied, slug, text, latest, samples)
    kind = AuthoringEvent.Kind.IMPORTED if imported_from else (
        AuthoringEvent.Kind.CREATED if question is None else AuthoringEvent.Kind.EDITED
    )  # fmt: skip
    detail = {"version": version.number, "applied": True}
    if imported_from:
        detail["file"] = imported_from
    else:
        detail["samples"] = len(samples)
    audit.record(kind, SUBJECT, slug, user, **detail)
    return version


def _same_question(text: str, spec: QuestionSpec) -> bool:
    try:
        return parse_text(text, spec.path) == spec
    except BankFileError:
        return False


def _new_version(
    user, question: Question, slug: str, text: str, latest: QuestionVersion | None, samples: list[str]
) -> QuestionVersion:
    number = (latest.number if latest else 0) + 1
    try:
        with transaction.atomic():
            return QuestionVersion.objects.create(
                slug=slug, question=question, number=number, text=text, content_hash=text_hash(text),
                sample_answers=samples, created_by=user,
            )  # fmt: skip
    except IntegrityError:
        raise QuestionRefused(
            {"": _("Someone else saved this question at the same moment. Reload the page and try again.")}
        ) from None


def _changed_since_message(question: Question, base: str) -> str:
    latest = latest_version(question.slug)
    # The same file under a newer version number: someone saved other sample answers.
    samples_only = base.split(":")[0] == question.content_hash
    if latest is not None and (samples_only or shows_latest_version(question, latest)):
        return _(
            "%(user)s saved version %(number)s at %(when)s while you were editing. Your changes were not saved: "
            "reload the page to see theirs, then make your changes again."
        ) % {"user": latest.created_by.username, "number": latest.number, "when": f"{latest.created_at:%Y-%m-%d %H:%M}"}
    return _(
        "The question was reloaded from its bank file while you were editing. Your changes were not saved: "
        "reload the page, then make your changes again."
    )


def import_file(user, filename: str, data: bytes, *, into: str | None = None) -> QuestionVersion:
    """An uploaded question file becomes the next version of its question (a new question if none has its
    slug). Checked completely before anything is written; ``into`` insists on one question's slug."""
    name = Path(filename or "").name
    if not name.endswith(".md"):
        raise QuestionRefused({"file": _("%(name)s: a question file is a .md file.") % {"name": name or "?"}})
    if len(data) > MAX_FILE_BYTES:
        raise QuestionRefused(
            {"file": _("%(name)s: %(size)s bytes; a question file may have at most %(limit)s.")
             % {"name": name, "size": len(data), "limit": MAX_FILE_BYTES}}
        )  # fmt: skip
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise QuestionRefused({"file": _("%(name)s: not UTF-8 text.") % {"name": name}}) from None
    text = text.replace("\r\n", "\n")
    try:
        spec = parse_text(text, Path("bank") / name)
    except BankFileError as exc:
        raise QuestionRefused({"file": str(exc)}) from None
    if into is not None and spec.slug != into:
        raise QuestionRefused(
            {
                "file": _("%(name)s is the question %(slug)s, not %(into)s.")
                % {"name": name, "slug": spec.slug, "into": into}
            }
        )
    return save_text(user, text, spec, editing=None, base=None, imported_from=name)


def export_file(user, question: Question, number: int | None = None) -> tuple[str, str]:
    """(file name, text) of a saved version, or of what candidates see now; recorded in the audit trail."""
    if number is None:
        text, origin = current_text(question)
        latest = latest_version(question.slug)
        detail = {"version": latest.number if origin == "version" else None, "source": origin}
    else:
        version = QuestionVersion.objects.filter(slug=question.slug, number=number).first()
        if version is None:
            raise QuestionRefused({"version": _("There is no version %(number)s.") % {"number": number}})
        text, detail = version.text, {"version": number}
    audit.record(AuthoringEvent.Kind.EXPORTED, SUBJECT, question.slug, user, **detail)
    return f"{question.slug}.md", text


def history(slug: str) -> list[dict]:
    """Saved versions, newest first, each with who, when and a unified diff against the one before."""
    versions = list(QuestionVersion.objects.filter(slug=slug).select_related("created_by").order_by("number"))
    origins = {
        event.detail.get("version"): _origin_label(event.detail)
        for event in AuthoringEvent.objects.filter(subject=SUBJECT, slug=slug, kind=AuthoringEvent.Kind.IMPORTED)
    }
    rows, previous = [], None
    for version in versions:
        diff = samples_diff = ""
        if previous is not None:
            diff = "".join(
                difflib.unified_diff(
                    previous.text.splitlines(keepends=True), version.text.splitlines(keepends=True),
                    f"v{previous.number}/{slug}.md", f"v{version.number}/{slug}.md",
                )
            )  # fmt: skip
            samples_diff = "".join(
                difflib.unified_diff(
                    _samples_text(previous.sample_answers), _samples_text(version.sample_answers),
                    f"v{previous.number}/sample answers", f"v{version.number}/sample answers",
                )
            )  # fmt: skip
        rows.append(
            {
                "version": version, "diff": diff, "samples_diff": samples_diff, "samples": version.sample_answers,
                "origin": origins.get(version.number, ""), "first": previous is None,
            }
        )  # fmt: skip
        previous = version
    return rows[::-1]


def _samples_text(samples: list[str]) -> list[str]:
    """The sample answers as lines a diff can compare, each under a numbered heading."""
    lines = []
    for number, sample in enumerate(samples, start=1):
        lines.append(f"# sample answer {number}\n")
        lines += [line + "\n" for line in sample.splitlines()]
    return lines


def _origin_label(detail: dict) -> str:
    if detail.get("file"):
        return _("imported from the file %(name)s") % {"name": detail["file"]}
    if detail.get("source") == "bank file":
        return _("the bank file as loadbank applied it")
    if detail.get("source") == "database":
        return _("the question as the bank held it")
    return ""


def events(slug: str) -> list[AuthoringEvent]:
    return audit.events_for(SUBJECT, slug)


def question_rows(query: str = "", topic: str = "") -> QuerySet[Question]:
    """The author's list: active questions with their number of saved versions and the latest one's author."""
    latest = QuestionVersion.objects.filter(slug=OuterRef("slug")).order_by("-number")
    rows = (
        Question.objects.active()
        .select_related("topic")
        .annotate(
            version_count=Coalesce(
                Subquery(
                    QuestionVersion.objects.filter(slug=OuterRef("slug"))
                    .values("slug")
                    .annotate(n=Count("id"))
                    .values("n")[:1]
                ),
                0,
            ),
            last_number=Subquery(latest.values("number")[:1]),
            last_by=Subquery(latest.values("created_by__username")[:1]),
            last_at=Subquery(latest.values("created_at")[:1]),
        )
        .order_by("topic__position", "slug")
    )
    if topic:
        rows = rows.filter(topic__slug=topic)
    for word in query.split():
        rows = rows.filter(Q(slug__icontains=word) | Q(title_en__icontains=word) | Q(title_zh__icontains=word))
    return rows

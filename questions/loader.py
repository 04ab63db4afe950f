"""Import the question files into the database, idempotently.

Every file is parsed and cross-checked before anything is written; then one
transaction applies the changes. A bad file therefore leaves the database as it
was, and the error names the file, the place and the problem. Files that
disappeared are reported and their questions retired (hidden, history kept),
never deleted.

A question written or edited in the browser (``apply_authored_question``, the same code path) is kept
as it is until its bank file itself changes: the file wins only when someone changed the file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from django.core.cache import cache
from django.db import transaction

from questions.bankfile import (
    BANK_DIR,
    LANGS,
    BankFileError,
    QuestionSpec,
    TopicSpec,
    iter_question_files,
    load_topics,
    parse_question,
)
from questions.models import Question, RubricPoint, SearchTerm, Tag, Topic
from questions.rendering import render_markdown
from questions.services import TOPIC_COUNTS_CACHE_KEY
from questions.textsearch import text_terms

# Bump when rendering or indexing changes so unchanged files are re-processed.
PIPELINE_VERSION = "2"
TERM_WEIGHTS = {"title": 4, "tags": 3, "concepts": 2, "topic": 2, "prompt": 1}


class BankLoadError(Exception):
    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("\n".join(errors))


@dataclass
class LoadReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    reactivated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # edited in the browser, bank file unchanged since
    topics: int = 0

    def summary(self) -> str:
        text = (
            f"{self.topics} topics; questions: {len(self.created)} created, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.reactivated)} restored, {len(self.retired)} retired"
        )
        return text + (f", {len(self.kept)} kept as edited in the browser" if self.kept else "")


class AuthoredQuestionError(Exception):
    """A question written in the browser does not fit the bank; ``errors`` maps the field to the problem."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{where}: {problem}" for where, problem in errors.items()))


def search_terms_for(
    *, titles: list[str], prompts: list[str], tags: list[str], concepts: list[list[str]], topic_names: list[str]
) -> dict[str, int]:
    """term → weight (the heaviest field it appears in). The reference answer is never indexed:
    a search hit must not reveal what the answer says."""
    weighted: dict[str, int] = {}
    fields = {
        "title": " ".join(titles),
        "tags": " ".join(t.replace("-", " ") for t in tags),
        "concepts": " ".join(" ".join(group) for group in concepts),
        "topic": " ".join(topic_names),
        "prompt": " ".join(prompts),
    }
    for name, text in fields.items():
        for term in text_terms(text):
            weighted[term] = max(weighted.get(term, 0), TERM_WEIGHTS[name])
    return weighted


def parse_bank(bank_dir: Path = BANK_DIR) -> tuple[list[TopicSpec], list[QuestionSpec]]:
    """Parse and cross-check every file; raise BankLoadError listing every problem."""
    try:
        topics = load_topics(bank_dir / "topics.yaml")
    except BankFileError as exc:
        raise BankLoadError([str(exc)]) from exc
    topic_slugs = {t.slug for t in topics}
    errors: list[str] = []
    specs: list[QuestionSpec] = []
    for path in iter_question_files(bank_dir):
        try:
            specs.append(parse_question(path, topic_slugs))
        except BankFileError as exc:
            errors.append(str(exc))
    by_slug: dict[str, QuestionSpec] = {}
    by_source: dict[tuple[str, str], QuestionSpec] = {}
    for spec in specs:
        if spec.slug in by_slug:
            errors.append(f"{spec.path}: slug: {spec.slug!r} is already used by {by_slug[spec.slug].path}")
        by_slug[spec.slug] = spec
        source = (spec.source_document, spec.source_number)
        if source in by_source:
            errors.append(
                f"{spec.path}: source: {source[0]} #{source[1]} is already covered by {by_source[source].path}"
            )
        by_source[source] = spec
    for spec in specs:
        for i, other in enumerate(spec.related_questions):
            if other not in by_slug:
                errors.append(f"{spec.path}: related_questions[{i}]: no question with slug {other!r}")
    if errors:
        raise BankLoadError(errors)
    return topics, specs


def file_hash(path: Path) -> str:
    return hashlib.sha256(PIPELINE_VERSION.encode() + path.read_bytes()).hexdigest()


def text_hash(text: str) -> str:
    """A question written in the browser is known by its text's hash (``content_hash``), so its author can
    tell whether the bank still shows the version they saved."""
    return hashlib.sha256(text.encode()).hexdigest()


def bank_file_hash(data: bytes) -> str:
    """The file's bytes alone: a new PIPELINE_VERSION re-renders files but is no change to the file."""
    return hashlib.sha256(data).hexdigest()


@transaction.atomic
def load_bank(bank_dir: Path = BANK_DIR) -> LoadReport:
    topic_specs, specs = parse_bank(bank_dir)
    report = LoadReport(topics=len(topic_specs))
    topics = {}
    for spec in topic_specs:
        topics[spec.slug], _ = Topic.objects.update_or_create(
            slug=spec.slug,
            defaults={
                "name_en": spec.name["en"],
                "name_zh": spec.name["zh"],
                "description_en": spec.description["en"],
                "description_zh": spec.description["zh"],
                "position": spec.position,
            },
        )

    existing = {q.slug: q for q in Question.objects.all()}
    touched: list[tuple[Question, QuestionSpec]] = []
    marked: list[Question] = []
    for spec in specs:
        digest = file_hash(spec.path)
        raw_hash = bank_file_hash(spec.path.read_bytes())
        question = existing.get(spec.slug)
        if question is not None and not question.retired and question.origin == Question.Origin.BROWSER:
            if question.bank_file_hash == raw_hash:
                report.kept.append(spec.slug)
                continue
        if question is not None and question.content_hash == digest and not question.retired:
            report.unchanged.append(spec.slug)
            if question.bank_file_hash != raw_hash or question.origin != Question.Origin.BANK:
                question.bank_file_hash, question.origin = raw_hash, Question.Origin.BANK
                marked.append(question)
            continue
        if question is None:
            question = Question(slug=spec.slug)
            report.created.append(spec.slug)
        else:
            (report.reactivated if question.retired else report.updated).append(spec.slug)
        _apply_spec(
            question, spec, topics[spec.topic], digest, bank_dir, origin=Question.Origin.BANK, raw_hash=raw_hash
        )
        touched.append((question, spec))
    # Databases loaded before files were tracked learn their hashes here, so a later browser edit is kept.
    Question.objects.bulk_update(marked, ["bank_file_hash", "origin"])

    all_questions = {q.slug: q for q in Question.objects.all()}
    for question, spec in touched:
        question.related_questions.set([all_questions[s] for s in spec.related_questions])

    present = {spec.slug for spec in specs}
    for slug, question in existing.items():
        if slug not in present and not question.retired and question.origin == Question.Origin.BROWSER:
            report.kept.append(slug)  # made (or last edited) in the browser: no file to miss
        elif slug not in present and not question.retired:
            question.retired = True
            question.save(update_fields=["retired", "updated_at"])
            SearchTerm.objects.filter(question=question).delete()  # the index holds active questions only
            report.retired.append(slug)
    transaction.on_commit(lambda: cache.delete(TOPIC_COUNTS_CACHE_KEY))
    return report


def authored_question_problems(spec: QuestionSpec) -> tuple[dict[str, str], list[str]]:
    """What the bank would refuse in a question written in the browser (field → problem), and warnings.

    The parser has checked the file itself; this checks it against the other questions, as
    ``parse_bank`` does for files."""
    errors: dict[str, str] = {}
    active = Question.objects.active()
    for i, other in enumerate(spec.related_questions):
        if other == spec.slug:
            errors[f"related_questions[{i}]"] = "a question cannot be related to itself"
        elif not active.filter(slug=other).exists():
            errors[f"related_questions[{i}]"] = f"no question with slug {other!r}"
    warnings = [
        f"source: {spec.source_document} #{spec.source_number} is also the source of {other!r}; "
        "loadbank refuses two bank files with one source"
        for other in active.filter(source_document=spec.source_document, source_number=spec.source_number)
        .exclude(slug=spec.slug)
        .values_list("slug", flat=True)
    ]
    return errors, warnings


@transaction.atomic
def apply_authored_question(spec: QuestionSpec, text: str) -> Question:
    """Make ``spec`` (parsed from ``text`` by ``parse_question_text``) the question candidates see,
    through the code path loadbank uses. loadbank keeps it until the bank file itself changes."""
    errors, _warnings = authored_question_problems(spec)
    if errors:
        raise AuthoredQuestionError(errors)
    try:
        topic = Topic.objects.get(slug=spec.topic)
    except Topic.DoesNotExist:
        raise AuthoredQuestionError({"topic": f"unknown topic {spec.topic!r}"}) from None
    question = Question.objects.select_for_update().filter(slug=spec.slug).first() or Question(slug=spec.slug)
    raw_hash = question.bank_file_hash
    if question.pk and question.origin == Question.Origin.BANK and not raw_hash:
        # Loaded before files were tracked: remember the file it came from, so loadbank keeps this edit.
        path = BANK_DIR / question.file_path
        if path.is_file() and file_hash(path) == question.content_hash:
            raw_hash = bank_file_hash(path.read_bytes())
    _apply_spec(question, spec, topic, text_hash(text), BANK_DIR, origin=Question.Origin.BROWSER, raw_hash=raw_hash)
    question.related_questions.set(Question.objects.filter(slug__in=spec.related_questions))
    transaction.on_commit(lambda: cache.delete(TOPIC_COUNTS_CACHE_KEY))
    return question


def _apply_spec(
    question: Question, spec: QuestionSpec, topic: Topic, digest: str, bank_dir: Path, *, origin: str, raw_hash: str
) -> None:
    question.origin = origin
    question.bank_file_hash = raw_hash
    question.topic = topic
    question.difficulty = spec.difficulty
    question.source_document = spec.source_document
    question.source_number = spec.source_number
    question.references = spec.references
    for lang in LANGS:
        setattr(question, f"title_{lang}", spec.title[lang])
        setattr(question, f"prompt_{lang}", spec.prompt[lang])
        setattr(question, f"answer_{lang}", spec.answer[lang])
        setattr(question, f"prompt_html_{lang}", render_markdown(spec.prompt[lang]))
        setattr(question, f"answer_html_{lang}", render_markdown(spec.answer[lang]))
    question.file_path = str(spec.path.relative_to(bank_dir)) if spec.path.is_relative_to(bank_dir) else str(spec.path)
    question.content_hash = digest
    question.retired = False
    question.save()

    question.tags.set([Tag.objects.get_or_create(slug=slug)[0] for slug in spec.tags])
    question.rubric.all().delete()
    RubricPoint.objects.bulk_create(
        RubricPoint(
            question=question,
            key=point.key,
            position=i,
            weight=point.weight,
            text_en=point.text["en"],
            text_zh=point.text["zh"],
            concepts=point.concepts,
            misconceptions=[m.as_dict() for m in point.misconceptions],
        )
        for i, point in enumerate(spec.rubric)
    )
    terms = search_terms_for(
        titles=list(spec.title.values()),
        prompts=list(spec.prompt.values()),
        tags=spec.tags,
        concepts=[group for point in spec.rubric for group in point.concepts],
        topic_names=[topic.name_en, topic.name_zh],
    )
    SearchTerm.objects.filter(question=question).delete()
    SearchTerm.objects.bulk_create(SearchTerm(question=question, term=t, weight=w) for t, w in terms.items())

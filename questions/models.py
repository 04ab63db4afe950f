from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from core.contentlang import content_language


def current_lang() -> str:
    """The content language ('zh' or 'en') of the active UI language."""
    return content_language(get_language())


class BilingualMixin:
    def localized(self, field: str, lang: str | None = None) -> str:
        return getattr(self, f"{field}_{lang or current_lang()}")


class Topic(BilingualMixin, models.Model):
    slug = models.SlugField(unique=True)
    name_en = models.CharField(max_length=120)
    name_zh = models.CharField(max_length=120)
    description_en = models.TextField()
    description_zh = models.TextField()
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "slug"]

    def __str__(self) -> str:
        return self.name_en

    @property
    def name(self) -> str:
        return self.localized("name")

    @property
    def description(self) -> str:
        return self.localized("description")


class Tag(models.Model):
    slug = models.SlugField(unique=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class QuestionQuerySet(models.QuerySet):
    def active(self) -> QuestionQuerySet:
        return self.filter(retired=False)

    def page_rows(self, ids: list[int]) -> list[Question]:
        """The listing rows for ``ids``, in the order given."""
        by_id = self.for_listing().in_bulk(ids)
        return [by_id[i] for i in ids if i in by_id]

    def for_listing(self) -> QuestionQuerySet:
        """Lists sort and page thousands of rows: leave the large answer and HTML columns behind."""
        return (
            self.select_related("topic")
            .prefetch_related("tags")
            .defer("answer_en", "answer_zh", "answer_html_en", "answer_html_zh", "prompt_html_en", "prompt_html_zh")
        )


class Question(BilingualMixin, models.Model):
    slug = models.SlugField(max_length=120, unique=True)
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="questions")
    difficulty = models.PositiveSmallIntegerField()
    tags = models.ManyToManyField(Tag, related_name="questions", blank=True)
    source_document = models.CharField(max_length=120)
    source_number = models.CharField(max_length=16)
    related_labs = models.JSONField(default=list, blank=True)
    references = models.JSONField(
        default=list, blank=True, help_text="Documents the reference answer was checked against (front matter)."
    )
    related_questions = models.ManyToManyField("self", symmetrical=False, blank=True)
    has_lab = models.BooleanField(default=False, db_index=True)

    title_en = models.CharField(max_length=300)
    title_zh = models.CharField(max_length=300)
    prompt_en = models.TextField()
    prompt_zh = models.TextField()
    answer_en = models.TextField()
    answer_zh = models.TextField()
    # Sanitised HTML rendered at import time, so pages never run Markdown per request.
    prompt_html_en = models.TextField()
    prompt_html_zh = models.TextField()
    answer_html_en = models.TextField()
    answer_html_zh = models.TextField()

    class Origin(models.TextChoices):
        BANK = "bank", _("bank file")
        BROWSER = "browser", _("written in the browser")

    file_path = models.CharField(max_length=300, help_text="Path of the source file under questions/bank/")
    content_hash = models.CharField(max_length=64)
    # Where the content candidates see came from. A browser edit is kept by loadbank until the bank file
    # itself changes: ``bank_file_hash`` is the file as loadbank last applied it.
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.BANK)
    bank_file_hash = models.CharField(
        max_length=64, blank=True, help_text="sha256 of the bank file's bytes when loadbank last applied it"
    )
    retired = models.BooleanField(default=False, help_text="Its file was removed; kept for practice history.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = QuestionQuerySet.as_manager()

    class Meta:
        # Easiest first. The listing indexes end in id so paging over ids (even at a
        # large OFFSET) is an index-only scan: no sort, no table reads.
        ordering = ["difficulty", "slug"]
        indexes = [
            models.Index(fields=["retired", "difficulty", "slug", "id"], name="question_listing"),
            models.Index(fields=["topic", "retired", "difficulty", "slug", "id"], name="question_topic_listing"),
        ]
        constraints = [
            models.CheckConstraint(condition=models.Q(difficulty__gte=1, difficulty__lte=5), name="difficulty_1_to_5"),
        ]

    def __str__(self) -> str:
        return self.slug

    @property
    def title(self) -> str:
        return self.localized("title")

    @property
    def prompt_html(self) -> str:
        return self.localized("prompt_html")

    @property
    def answer_html(self) -> str:
        return self.localized("answer_html")

    @property
    def source_label(self) -> str:
        return f"{self.source_document} #{self.source_number}"


class RubricPoint(BilingualMixin, models.Model):
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="rubric")
    key = models.SlugField(max_length=80)
    position = models.PositiveSmallIntegerField()
    weight = models.PositiveSmallIntegerField()
    text_en = models.TextField()
    text_zh = models.TextField()
    concepts = models.JSONField(help_text="List of synonym lists, both languages mixed.")
    misconceptions = models.JSONField(
        default=list, blank=True, help_text="Wrong claims: {pattern, en, zh, penalty}; see questions.concepts."
    )

    class Meta:
        ordering = ["question", "position"]
        constraints = [models.UniqueConstraint(fields=["question", "key"], name="unique_rubric_key")]

    def __str__(self) -> str:
        return f"{self.question.slug}:{self.key}"

    @property
    def text(self) -> str:
        return self.localized("text")


class SearchTerm(models.Model):
    """Inverted index: one row per (term, question), for active questions only (retiring a
    question drops its rows), so an unfiltered search never has to join the question table.
    Works the same on SQLite and PostgreSQL."""

    term = models.CharField(max_length=40)
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="+")
    weight = models.PositiveSmallIntegerField()

    class Meta:
        indexes = [models.Index(fields=["term", "question", "weight"], name="searchterm_lookup")]
        constraints = [models.UniqueConstraint(fields=["question", "term"], name="unique_question_term")]

    def __str__(self) -> str:
        return f"{self.term} → {self.question_id}"


class Reveal(models.Model):
    """The candidate unlocked the reference answer, by answering or by choosing to reveal it."""

    class Via(models.TextChoices):
        ANSWER = "answer", "practice answer"
        REVEAL = "reveal", "revealed without answering"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reveals")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="reveals")
    via = models.CharField(max_length=10, choices=Via.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "question"], name="one_reveal_per_user_question")]

    def __str__(self) -> str:
        return f"{self.user} revealed {self.question} ({self.via})"


class PracticeAnswer(models.Model):
    MAX_LENGTH = 20_000

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="practice_answers")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="practice_answers")
    text = models.TextField()
    text_html = models.TextField()
    coverage = models.JSONField(help_text="Per rubric point: concepts found and missing.")
    coverage_percent = models.PositiveSmallIntegerField()
    self_scores = models.JSONField(null=True, blank=True, help_text="Rubric key → 0 (missed), 1 (partly), 2 (fully)")
    self_score_percent = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    self_scored_at = models.DateTimeField(null=True, blank=True)
    # Written in an interview: scored the same way, but kept out of the candidate's practice history and
    # progress, and it does not unlock the reference answer.
    for_interview = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "question", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.user} on {self.question.slug} at {self.created_at:%Y-%m-%d %H:%M}"

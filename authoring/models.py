"""Drafts and versions authors make in the browser, the validation jobs they start, and the audit trail.

Authoring owns these; it publishes only through the labs and questions services, with the same parser
as ``loadlabs`` / ``loadbank``. A lab or question draft keeps the whole file content (a lab as its folder,
path → text; a question as its Markdown file), so export and import are the files-in-git format itself.
"""

from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


def files_hash(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class LabDraft(models.Model):
    """A lab folder being edited. ``revision`` guards concurrent edits: a save names the revision it
    started from and is refused when another save came first."""

    slug = models.SlugField(max_length=120)
    lab = models.ForeignKey("labs.Lab", null=True, blank=True, on_delete=models.SET_NULL, related_name="drafts")
    based_on = models.ForeignKey(
        "labs.LabVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="the version it was copied from",
    )  # fmt: skip
    files = models.JSONField(default=dict, help_text="folder-relative path → text: lab.yaml, program/…, grader.py")
    revision = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    discarded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return f"draft of {self.slug} (r{self.revision})"


class ValidationJob(models.Model):
    """Validation of one lab version on chosen seeds, run on the authoring queue; rows fill in as runs end."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        PASSED = "passed", _("Passed")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")
        ERROR = "error", _("Platform error")

    draft = models.ForeignKey(LabDraft, null=True, blank=True, on_delete=models.SET_NULL, related_name="validations")
    version = models.ForeignKey("labs.LabVersion", on_delete=models.CASCADE, related_name="validation_jobs")
    seeds = models.JSONField(help_text="the seeds chosen, e.g. [0, 1, 2]")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    rows = models.JSONField(default=list, blank=True, help_text="one per finished run: variant, seed, checks, …")
    total_runs = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    message = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"validation of {self.version} on seeds {self.seeds} ({self.status})"


class QuestionVersion(models.Model):
    """One saved state of a question's Markdown file (front matter + sections), made in the browser or imported."""

    slug = models.SlugField(max_length=120)
    question = models.ForeignKey(
        "questions.Question", null=True, blank=True, on_delete=models.SET_NULL, related_name="authored_versions"
    )
    number = models.PositiveIntegerField()
    text = models.TextField(help_text="the whole Markdown file, as loadbank reads it")
    content_hash = models.CharField(max_length=64)
    # The file format has no place for them, so they live here: export and loadbank never see them.
    sample_answers = models.JSONField(
        default=list, blank=True, help_text="answers the author scored against the rubric in the editor, in order"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug", "-number"]
        constraints = [models.UniqueConstraint(fields=["slug", "number"], name="unique_question_version_number")]

    def __str__(self) -> str:
        return f"{self.slug} v{self.number}"


class AuthoringEvent(models.Model):
    """Audit trail: every create, edit, validate, publish, roll-back, import and export, with actor and time."""

    class Kind(models.TextChoices):
        CREATED = "created", _("created")
        EDITED = "edited", _("edited")
        VALIDATION_STARTED = "validation_started", _("validation started")
        VALIDATION_CANCELLED = "validation_cancelled", _("validation cancelled")
        VALIDATED = "validated", _("validated")
        PUBLISHED = "published", _("published")
        ROLLED_BACK = "rolled_back", _("rolled back")
        IMPORTED = "imported", _("imported")
        EXPORTED = "exported", _("exported")
        PREVIEWED = "previewed", _("previewed")
        DISCARDED = "discarded", _("discarded")

    class Subject(models.TextChoices):
        LAB = "lab", _("lab")
        QUESTION = "question", _("question")

    kind = models.CharField(max_length=24, choices=Kind.choices)
    subject = models.CharField(max_length=10, choices=Subject.choices)
    slug = models.SlugField(max_length=120)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.kind} {self.subject} {self.slug}"


class LabVersionSource(models.Model):
    """The folder a version was made from in the browser, as its author wrote it (comments and all), and who
    made it. Export gives these files back; a catalog version is exported from its parsed spec instead."""

    version = models.OneToOneField("labs.LabVersion", on_delete=models.CASCADE, related_name="authored_source")
    files = models.JSONField(help_text="folder-relative path → text, as in LabDraft.files")
    draft = models.ForeignKey(LabDraft, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    made_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"source of {self.version}"

"""Interview loops (templates), interviews, the candidate's invitation, answers, events and scorecards.

An interview points at the records the lower apps already keep: a lab item at its labs ``Attempt``,
a question item at the ``PracticeAnswer`` its final text was scored into. Drafts and their autosave
snapshots are kept here, because they exist only in an interview.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class ItemKind(models.TextChoices):
    QUESTION = "question", _("Question")
    LAB = "lab", _("Lab")


class InterviewTemplate(models.Model):
    """A reusable loop: an ordered list of questions and labs, a duration and instructions."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="interview_templates")
    title = models.CharField(max_length=200)
    instructions = models.TextField(blank=True)
    duration_minutes = models.PositiveSmallIntegerField(default=60)
    copied_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title


class TemplateItem(models.Model):
    template = models.ForeignKey(InterviewTemplate, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=8, choices=ItemKind.choices)
    question = models.ForeignKey(
        "questions.Question", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    lab = models.ForeignKey("labs.Lab", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    time_box_minutes = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["template", "position"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="question", question__isnull=False, lab__isnull=True)
                | Q(kind="lab", lab__isnull=False, question__isnull=True),
                name="template_item_names_one_thing",
            )
        ]

    def __str__(self) -> str:
        return f"item {self.position + 1} of template {self.template_id}"


class Interview(models.Model):
    class Status(models.TextChoices):
        SCHEDULED = "scheduled", _("Scheduled")
        IN_PROGRESS = "in_progress", _("In progress")
        AWAITING_SCORING = "awaiting_scoring", _("Awaiting scoring")
        SCORED = "scored", _("Scored")
        CANCELLED = "cancelled", _("Cancelled")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="owned_interviews")
    co_interviewers = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="co_interviews")
    template = models.ForeignKey(InterviewTemplate, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    title = models.CharField(max_length=200)
    instructions = models.TextField(blank=True)
    # Null until an invitation by e-mail is first used: that creates the account.
    candidate = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="interviews"
    )
    candidate_name = models.CharField(max_length=150)
    candidate_email = models.EmailField()
    window_opens_at = models.DateTimeField()
    window_closes_at = models.DateTimeField()
    duration_minutes = models.PositiveSmallIntegerField()
    extra_seconds = models.PositiveIntegerField(default=0, help_text="time the interviewers added")
    status = models.CharField(max_length=18, choices=Status.choices, default=Status.SCHEDULED, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-window_opens_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.title} — {self.candidate_name}"

    @property
    def ends_at(self):
        if self.started_at is None:
            return None
        return self.started_at + timedelta(minutes=self.duration_minutes, seconds=self.extra_seconds)

    def seconds_left(self, now=None) -> int | None:
        if self.started_at is None:
            return None
        if self.status != self.Status.IN_PROGRESS:
            return 0
        return max(0, int((self.ends_at - (now or timezone.now())).total_seconds()))

    @property
    def answerable(self) -> bool:
        return self.status == self.Status.IN_PROGRESS

    @classmethod
    def start(cls, pk: int) -> bool:
        """Scheduled → in progress, once, inside the window; True when this call started it."""
        now = timezone.now()
        return (
            cls.objects.filter(
                pk=pk, status=cls.Status.SCHEDULED, window_opens_at__lte=now, window_closes_at__gte=now
            ).update(status=cls.Status.IN_PROGRESS, started_at=now)
            == 1
        )

    @classmethod
    def finish(cls, pk: int) -> bool:
        """In progress → awaiting scoring, once; True when this call moved it."""
        return (
            cls.objects.filter(pk=pk, status=cls.Status.IN_PROGRESS).update(
                status=cls.Status.AWAITING_SCORING, finished_at=timezone.now()
            )
            == 1
        )


class InterviewItem(models.Model):
    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=8, choices=ItemKind.choices)
    question = models.ForeignKey(
        "questions.Question", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    lab = models.ForeignKey("labs.Lab", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # Fixed when the interview is made, so the candidate gets the program the interviewers prepared for.
    lab_version = models.ForeignKey(
        "labs.LabVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    seed = models.PositiveIntegerField(null=True, blank=True)
    time_box_seconds = models.PositiveIntegerField(null=True, blank=True)
    extra_seconds = models.PositiveIntegerField(default=0)
    opened_at = models.DateTimeField(null=True, blank=True, help_text="the candidate first opened it")
    closed_at = models.DateTimeField(null=True, blank=True, help_text="frozen: its time box or the interview ended")
    draft = models.TextField(blank=True, help_text="the candidate's answer as last autosaved")
    draft_saved_at = models.DateTimeField(null=True, blank=True)
    attempt = models.OneToOneField(
        "labs.Attempt", null=True, blank=True, on_delete=models.PROTECT, related_name="interview_item"
    )
    answer = models.OneToOneField(
        "questions.PracticeAnswer", null=True, blank=True, on_delete=models.PROTECT, related_name="interview_item"
    )

    class Meta:
        ordering = ["interview", "position"]
        constraints = [
            models.UniqueConstraint(fields=["interview", "position"], name="unique_interview_item_position"),
            models.CheckConstraint(
                condition=Q(kind="question", question__isnull=False, lab__isnull=True)
                | Q(kind="lab", lab__isnull=False, question__isnull=True, seed__isnull=False),
                name="interview_item_names_one_thing",
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.position + 1} of interview {self.interview_id}"

    @property
    def ends_at(self):
        if self.time_box_seconds is None or self.opened_at is None:
            return None
        return self.opened_at + timedelta(seconds=self.time_box_seconds + self.extra_seconds)

    @property
    def subject(self):
        return self.question if self.kind == ItemKind.QUESTION else self.lab

    @classmethod
    def save_draft(cls, pk: int, text: str) -> bool:
        """Store an autosaved draft unless the item is frozen; the conditional UPDATE makes a save that
        races the end of time lose, not overwrite the frozen answer."""
        return (
            cls.objects.filter(pk=pk, closed_at__isnull=True, interview__status=Interview.Status.IN_PROGRESS).update(
                draft=text, draft_saved_at=timezone.now()
            )
            == 1
        )


class AnswerSnapshot(models.Model):
    """An autosaved draft that differed from the one before: the review replays these."""

    item = models.ForeignKey(InterviewItem, on_delete=models.CASCADE, related_name="snapshots")
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["item", "created_at", "pk"]

    def __str__(self) -> str:
        return f"draft of item {self.item_id} at {self.created_at:%H:%M:%S}"


class Invitation(models.Model):
    """A single-use, expiring, revocable sign-in link. Only the token's SHA-256 is stored."""

    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="invitations")
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"invitation to interview {self.interview_id} ({self.state})"

    @staticmethod
    def hash(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @property
    def state(self) -> str:
        if self.revoked_at:
            return "revoked"
        if self.used_at:
            return "used"
        if self.expires_at <= timezone.now():
            return "expired"
        return "open"

    @classmethod
    def redeem(cls, token: str) -> Invitation | None:
        """Mark the invitation used, once, if it is neither used, revoked nor expired; None otherwise."""
        now = timezone.now()
        live = cls.objects.filter(token_hash=cls.hash(token), used_at__isnull=True, revoked_at__isnull=True)
        if live.filter(expires_at__gt=now).update(used_at=now) != 1:
            return None
        return cls.objects.select_related("interview").get(token_hash=cls.hash(token))


class Event(models.Model):
    """The audit trail, and the source of the candidate's messages (hints, notes, added time)."""

    class Kind(models.TextChoices):
        CREATED = "created", _("created")
        INVITED = "invited", _("invited")
        INVITATION_REVOKED = "invitation_revoked", _("invitation revoked")
        LINK_OPENED = "link_opened", _("link opened")
        STARTED = "started", _("started")
        ITEM_OPENED = "item_opened", _("item opened")
        ITEM_ANSWERED = "item_answered", _("item answered")
        LAB_SCORED = "lab_scored", _("lab auto-graded")
        HINT_RELEASED = "hint_released", _("hint released")
        TIME_ADDED = "time_added", _("time added")
        NOTE_SENT = "note_sent", _("note sent")
        ITEM_TIME_UP = "item_time_up", _("item time up")
        FINISHED = "finished", _("finished")
        SCORED = "scored", _("scored")
        OVERRIDDEN = "overridden", _("overridden")
        SUBMITTED = "submitted", _("scorecard submitted")
        EXPORTED = "exported", _("exported")

    CANDIDATE_VISIBLE = (Kind.HINT_RELEASED, Kind.NOTE_SENT, Kind.TIME_ADDED)

    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="events")
    item = models.ForeignKey(InterviewItem, null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # For the candidate's messages: {"text": ...}; for time: {"seconds": ...}; otherwise what the event needs.
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} on interview {self.interview_id}"


class Scorecard(models.Model):
    class Recommendation(models.TextChoices):
        STRONG_NO = "strong_no", _("Strong no")
        NO = "no", _("No")
        YES = "yes", _("Yes")
        STRONG_YES = "strong_yes", _("Strong yes")

    interview = models.ForeignKey(Interview, on_delete=models.CASCADE, related_name="scorecards")
    interviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scorecards")
    recommendation = models.CharField(max_length=10, choices=Recommendation.choices, blank=True)
    summary = models.TextField(blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["interview", "interviewer"], name="one_scorecard_each")]

    def __str__(self) -> str:
        return f"scorecard of {self.interviewer} on interview {self.interview_id}"

    @classmethod
    def submit(cls, pk: int) -> bool:
        """Draft → submitted, once; a submitted scorecard is not edited again."""
        return cls.objects.filter(pk=pk, submitted_at__isnull=True).update(submitted_at=timezone.now()) == 1


class PointScore(models.Model):
    """One interviewer's 0–4 for one rubric point (questions) or one auto-graded part of a lab.

    ``auto`` is what the platform measured (null for question points); a score that differs from it is
    an override and must carry a reason."""

    scorecard = models.ForeignKey(Scorecard, on_delete=models.CASCADE, related_name="points")
    item = models.ForeignKey(InterviewItem, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=80)
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    auto = models.PositiveSmallIntegerField(null=True, blank=True)
    note = models.TextField(blank=True)
    override_reason = models.TextField(blank=True)
    overridden_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item__position", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["scorecard", "item", "key"], name="one_score_per_point"),
            models.CheckConstraint(condition=Q(score__isnull=True) | Q(score__lte=4), name="score_0_to_4"),
            models.CheckConstraint(
                condition=Q(auto__isnull=True) | Q(score__isnull=True) | Q(score=F("auto")) | ~Q(override_reason=""),
                name="override_has_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} of item {self.item_id}: {self.score}"

    @property
    def overridden(self) -> bool:
        return self.auto is not None and self.score is not None and self.score != self.auto

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from sandbox.models import Run


class Lab(models.Model):
    class Origin(models.TextChoices):
        # loadlabs retires a catalog lab whose folder is gone; a lab made in the browser has no folder to lose.
        CATALOG = "catalog", _("Catalog folder")
        BROWSER = "browser", _("Made in the browser")

    class Family(models.TextChoices):
        NAN = "nan", _("NaN / divergence")
        LEAK = "leak", _("Memory leak")
        HANG = "hang", _("Hang / deadlock")
        PERF = "perf", _("Slowdown")
        CORRECTNESS = "correctness", _("Silent correctness")

    slug = models.SlugField(max_length=120, unique=True)
    family = models.CharField(max_length=12, choices=Family.choices)
    difficulty = models.PositiveSmallIntegerField()
    title_en = models.CharField(max_length=200)
    title_zh = models.CharField(max_length=200)
    current = models.ForeignKey("LabVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    retired = models.BooleanField(default=False)
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.CATALOG)
    questions = models.ManyToManyField("questions.Question", blank=True, related_name="labs")

    class Meta:
        ordering = ["family", "difficulty", "slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def published(self) -> bool:
        return not self.retired and self.current is not None and self.current.validated_at is not None

    @classmethod
    def publish(cls, version: LabVersion) -> bool:
        """Make a validated version current, unless a newer one already is; True when this call moved it."""
        newer = Q(current__isnull=False) & Q(current__number__gt=version.number)
        return cls.objects.filter(pk=version.lab_id).exclude(newer).update(current=version) == 1

    @classmethod
    def make_current(cls, version: LabVersion, expected_current_id: int | None) -> bool:
        """Roll back (or forward) to a validated ``version``, only if the current version is still the one
        the caller saw: two authors acting at once cannot silently undo each other. True when it moved."""
        if version.validated_at is None:
            return False
        return cls.objects.filter(pk=version.lab_id, current_id=expected_current_id).update(current=version) == 1


class LabVersion(models.Model):
    """One imported state of a lab folder. Attempts pin the version they started on."""

    lab = models.ForeignKey(Lab, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    # A version made in the browser is published by its author, never by the catalog's automatic validation.
    origin = models.CharField(max_length=8, choices=Lab.Origin.choices, default=Lab.Origin.CATALOG)
    spec = models.JSONField(help_text="the parsed lab folder (labs.spec.LabSpec.as_json)")
    created_at = models.DateTimeField(auto_now_add=True)
    validated_at = models.DateTimeField(null=True, blank=True)
    validation = models.JSONField(default=list, blank=True, help_text="rows of the last validation table")
    baseline = models.JSONField(default=dict, blank=True, help_text="measured on the faulty program when validated")
    distinguishing = models.JSONField(
        null=True, blank=True,
        help_text="names of the checks the faulty program failed on every validated seed (null: not validated)",
    )  # fmt: skip

    class Meta:
        ordering = ["lab", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["lab", "number"], name="unique_lab_version_number"),
            models.UniqueConstraint(fields=["lab", "content_hash"], name="unique_lab_version_hash"),
        ]

    def __str__(self) -> str:
        return f"{self.lab.slug} v{self.number}"


class Attempt(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", _("In progress")
        PASSED = "passed", _("Fixed")

    class Purpose(models.TextChoices):
        # An interview attempt's runs go ahead of practice on the worker queue, hints are released by the
        # interviewer, and the diagnosis rubric is not shown to the candidate.
        PRACTICE = "practice", _("Practice")
        INTERVIEW = "interview", _("Interview")
        # An author trying a draft as a candidate would: never listed, scored or counted against a quota.
        PREVIEW = "preview", _("Preview")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lab_attempts")
    version = models.ForeignKey(LabVersion, on_delete=models.PROTECT, related_name="attempts")
    seed = models.PositiveIntegerField()
    files = models.JSONField(help_text="the candidate's working copy: path → text")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    diagnosis_choice = models.CharField(max_length=60, blank=True)
    diagnosis_text = models.TextField(blank=True)
    diagnosis_score = models.PositiveSmallIntegerField(null=True, blank=True)
    diagnosis_detail = models.JSONField(default=dict, blank=True)
    diagnosed_at = models.DateTimeField(null=True, blank=True)
    # What the candidate is writing before they submit: {"root_cause", "evidence", "saved_at"}. Interviewers
    # watch it live; it is never scored.
    diagnosis_draft = models.JSONField(default=dict, blank=True)
    best_score = models.PositiveSmallIntegerField(null=True, blank=True)
    purpose = models.CharField(max_length=10, choices=Purpose.choices, default=Purpose.PRACTICE)
    closed_at = models.DateTimeField(
        null=True, blank=True, help_text="set when the attempt's time is over: nothing changes it after this"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "version"])]

    def __str__(self) -> str:
        return f"{self.user} on {self.version} (seed {self.seed})"

    @property
    def is_interview(self) -> bool:
        return self.purpose == self.Purpose.INTERVIEW

    @classmethod
    def mark_passed(cls, attempt_id: int) -> bool:
        """Open → passed, once; True when this call moved it. A passed attempt never reopens."""
        return cls.objects.filter(pk=attempt_id, status=cls.Status.OPEN).update(status=cls.Status.PASSED) == 1


class LabRun(models.Model):
    """A sandbox run that belongs to a lab: a candidate's run or fix, or a validation run."""

    class Kind(models.TextChoices):
        RUN = "run", _("Run")
        FIX = "fix", _("Submitted fix")
        VALIDATE = "validate", _("Validation")

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="lab_run")
    version = models.ForeignKey(LabVersion, on_delete=models.CASCADE, related_name="runs")
    attempt = models.ForeignKey(Attempt, null=True, blank=True, on_delete=models.CASCADE, related_name="lab_runs")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    seed = models.PositiveIntegerField()
    variant = models.CharField(max_length=80, blank=True, help_text="validation: baseline, solution or bad:<name>")
    # Drawn with `secrets` for every grading and kept here only: the grader's held-out data comes from it,
    # and it is never written into any file a run can read.
    heldout_seed = models.PositiveBigIntegerField(null=True, blank=True)
    checks = models.JSONField(default=list, blank=True)
    flags = models.JSONField(default=list, blank=True, help_text="static findings for human review")
    metrics = models.JSONField(default=dict, blank=True)
    passed = models.BooleanField(null=True)
    fix_percent = models.PositiveSmallIntegerField(null=True, blank=True)
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    score_detail = models.JSONField(default=dict, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)
    # Written by grading as it goes (labs.progress), read by the pages that follow the run live.
    progress = models.JSONField(default=dict, blank=True, help_text="the grading's current stage")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["attempt", "kind"])]

    def __str__(self) -> str:
        return f"{self.kind} of {self.version} (run {self.run_id})"


class HintReveal(models.Model):
    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="hint_reveals")
    index = models.PositiveSmallIntegerField()
    cost = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["attempt", "index"], name="unique_hint_reveal")]

    def __str__(self) -> str:
        return f"hint {self.index} of attempt {self.attempt_id}"


class ReferenceMemory(models.Model):
    """The held memory level of the lab's reference fix on one seed, after a leak check's warm-up, measured
    outside its ranks. A fix graded on that seed may not hold more than this plus the check's allowance
    (``labs.reference``): memory reserved up front and given back as a leak grows looks flat otherwise."""

    version = models.ForeignKey(LabVersion, on_delete=models.CASCADE, related_name="reference_memory")
    seed = models.PositiveIntegerField()
    source = models.CharField(max_length=20, help_text="where the memory was sampled (container or process tree)")
    check_name = models.CharField(max_length=80)
    level_mib = models.FloatField()
    lab_run = models.ForeignKey(LabRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    measured_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "seed", "source", "check_name"], name="unique_reference_memory")
        ]

    def __str__(self) -> str:
        return f"{self.check_name} of {self.version} seed {self.seed}: {self.level_mib:.1f} MiB"

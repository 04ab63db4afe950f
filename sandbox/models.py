"""Lab runs and everything they produce.

State changes go through ``Run.transition``: one conditional UPDATE, so a
redelivered task or a racing cancel can never move a run twice or start a
second container for it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F
from django.utils import timezone


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        STARTING = "starting"
        RUNNING = "running"
        GRADING = "grading"
        PASSED = "passed"
        FAILED = "failed"
        ERROR = "error"  # the platform's fault: never counted against a candidate
        CANCELLED = "cancelled"

    TERMINAL = frozenset({Status.PASSED, Status.FAILED, Status.ERROR, Status.CANCELLED})
    ACTIVE = frozenset({Status.QUEUED, Status.STARTING, Status.RUNNING, Status.GRADING})

    class Queue(models.TextChoices):
        CPU = "cpu"
        GPU = "gpu"

    class Gpu(models.TextChoices):
        NONE = "none"
        OPTIONAL = "optional"
        REQUIRED = "required"

    class Priority(models.IntegerChoices):
        # Lower starts first (sandbox.dispatch): a live interview never waits behind practice, and lab
        # validation, which nobody watches, waits behind both.
        INTERVIEW = 0
        PRACTICE = 1
        VALIDATION = 2

    # What each priority weighs on a contended worker's cores (its containers' and its grader's cpu_shares):
    # a candidate waiting for a result runs ahead of the validation a fresh platform does in the background.
    CPU_WEIGHTS = {Priority.INTERVIEW: 2048, Priority.PRACTICE: 1024, Priority.VALIDATION: 128}

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="runs")
    priority = models.PositiveSmallIntegerField(choices=Priority.choices, default=Priority.PRACTICE)
    purpose = models.CharField(max_length=20, default="run", help_text="run, grade or validate")
    queue = models.CharField(max_length=8, choices=Queue.choices, default=Queue.CPU)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    status_changed_at = models.DateTimeField(default=timezone.now)

    files = models.JSONField(help_text="relative path → text of every program file")
    entry = models.CharField(max_length=200, default="main.py")
    ranks = models.PositiveSmallIntegerField(default=1)
    env = models.JSONField(default=dict, blank=True, help_text="debug toggles the candidate chose")
    timeout_seconds = models.PositiveIntegerField(default=60)
    memory_mb = models.PositiveIntegerField(default=1024)
    cpus = models.FloatField(default=1.0)
    gpu = models.CharField(max_length=8, choices=Gpu.choices, default=Gpu.NONE)

    backend = models.CharField(max_length=10, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    container_id = models.CharField(max_length=80, blank=True)
    deliveries = models.PositiveSmallIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    # Pause conditions and requests of a practice run (sandbox.pausing); every change bumps control_rev,
    # which the worker watches to pass the new settings to the ranks.
    control = models.JSONField(default=dict, blank=True)
    control_rev = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # When the program's output ended: the run's end as the candidate sees it. A judged run is finished
    # (finished_at) only once it has been graded.
    ended_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    exit_codes = models.JSONField(default=dict, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    timed_out = models.BooleanField(default=False)
    oom_killed = models.BooleanField(default=False)
    duration_seconds = models.FloatField(null=True, blank=True)
    peak_memory_bytes = models.BigIntegerField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    log_bytes = models.BigIntegerField(default=0)
    log_truncated = models.BooleanField(default=False)
    events_truncated = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "status"]), models.Index(fields=["queue", "status", "priority"])]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"

    @property
    def cpu_weight(self) -> int:
        return self.CPU_WEIGHTS.get(self.priority, self.CPU_WEIGHTS[self.Priority.PRACTICE])

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL

    @classmethod
    def transition(cls, run_id: int, from_states, to_state: str, **fields) -> bool:
        """Move the run only if it is still in one of ``from_states``; True when this call moved it."""
        now = timezone.now()
        values = {"status": to_state, "status_changed_at": now, **fields}
        if to_state in cls.TERMINAL:
            values.setdefault("finished_at", now)
        return cls.objects.filter(pk=run_id, status__in=list(from_states)).update(**values) == 1

    @classmethod
    def count_delivery(cls, run_id: int) -> int:
        cls.objects.filter(pk=run_id).update(deliveries=F("deliveries") + 1)
        return cls.objects.filter(pk=run_id).values_list("deliveries", flat=True).first() or 0


class RunLogChunk(models.Model):
    """Log text in arrival order; the worker writes a chunk about every half second."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="log_chunks")
    seq = models.PositiveIntegerField()
    text = models.TextField()

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="unique_log_chunk")]

    def __str__(self) -> str:
        return f"run {self.run_id} log #{self.seq}"


class RunEvent(models.Model):
    """One telemetry record from the harness (metric, memory, heartbeat, exit...)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=20)
    rank = models.SmallIntegerField(null=True, blank=True)
    t = models.FloatField(help_text="seconds since the harness started")
    data = models.JSONField()

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="unique_run_event")]
        indexes = [models.Index(fields=["run", "kind", "seq"])]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.kind} #{self.seq}"


class RunDiagnostic(models.Model):
    class Kind(models.TextChoices):
        STACKS = "stacks", "stack dump of every rank"
        MEMORY = "memory", "memory snapshot"
        # Captured by the rank runtime at the first non-finite loss: display only, like every in-rank capture.
        NONFINITE = "nonfinite", "first non-finite loss"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="diagnostics")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    status = models.CharField(max_length=10, default="pending")  # pending | done | failed
    output = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "created_at"]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.kind} ({self.status})"


class RunArtifact(models.Model):
    """A file the program left in its output folder, copied out as a tar stream and size-capped."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=255)
    size = models.BigIntegerField()
    content = models.BinaryField()

    class Meta:
        ordering = ["run", "name"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="unique_artifact_name")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.name}"

"""Creating, cancelling and probing runs: transactional, with side effects after commit."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F, Q, QuerySet

from sandbox import pausing
from sandbox.filenames import clean_name, name_problem
from sandbox.models import Run, RunDiagnostic

MAX_FILES = 20
MAX_FILE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 1024 * 1024


class RunRejected(ValueError):
    """Bad input for a run; the message says what and where, starting with the field ("files: …")."""

    @property
    def field(self) -> str:
        head = str(self).split(":", 1)[0].split("[", 1)[0].split(".", 1)[0]
        return head if head in ("files", "entry", "ranks", "pause") else "detail"


def validate_files(files: dict) -> dict[str, str]:
    if not isinstance(files, dict) or not files:
        raise RunRejected("files: send at least one file as {path: text}")
    if len(files) > MAX_FILES:
        raise RunRejected(f"files: at most {MAX_FILES} files, got {len(files)}")
    total = 0
    clean = {}
    for name, text in files.items():
        problem = name_problem(name)
        if problem:
            raise RunRejected(f"files: {name!r}: {problem}")
        if not isinstance(text, str) or "\x00" in text:
            raise RunRejected(f"files[{name}]: must be text")
        size = len(text.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            raise RunRejected(f"files[{name}]: {size} bytes is over the {MAX_FILE_BYTES}-byte limit")
        total += size
        clean[clean_name(name)] = text
    if total > MAX_TOTAL_BYTES:
        raise RunRejected(f"files: {total} bytes in all is over the {MAX_TOTAL_BYTES}-byte limit")
    return clean


def runs_an_author_may_read(user) -> QuerySet[Run]:
    """The runs whose page, log and artifacts an author may open: their own, every run for staff, and any
    lab validation run. A validation run executes only a lab's own files (faulty program, solution,
    cover-ups), which every author may open in the editor, so a failing row of anyone's validation table
    links to a log its readers can see. Candidates' runs and other authors' own runs stay private."""
    if user.is_staff:
        return Run.objects.all()
    return Run.objects.filter(Q(owner=user) | Q(purpose="validate"))


@transaction.atomic
def create_run(*, owner, files: dict, entry: str = "main.py", ranks: int = 1, env: dict | None = None,
               timeout_seconds: int = 60, memory_mb: int = 1024, cpus: float = 1.0,
               gpu: str = Run.Gpu.NONE, purpose: str = "run", enqueue: bool = True,
               priority: int | None = None, pause: dict | None = None) -> Run:  # fmt: skip
    """``enqueue=False`` leaves the run for the caller to execute in-process (lab validation).
    ``priority``: a ``Run.Priority``; by default validation runs are background work, everything else practice.
    ``pause``: conditions at which the ranks stop for the candidate's tools (see sandbox.pausing)."""
    clean = validate_files(files)
    if entry not in clean:
        raise RunRejected(f"entry: {entry!r} is not one of the files")
    if not 1 <= ranks <= 8:
        raise RunRejected("ranks: between 1 and 8")
    try:
        control = pausing.conditions(pause)
    except pausing.BadConditions as exc:
        raise RunRejected(str(exc)) from None
    if control and purpose not in pausing.PAUSABLE_PURPOSES:
        raise RunRejected("pause: only practice runs pause; a graded run runs straight through")
    queue = Run.Queue.GPU if gpu == Run.Gpu.REQUIRED else Run.Queue.CPU
    if priority is None:
        priority = Run.Priority.VALIDATION if purpose == "validate" else Run.Priority.PRACTICE
    if enqueue and owner is not None:
        _check_queue_share(owner)
    run = Run.objects.create(
        priority=priority,
        owner=owner, files=clean, entry=entry, ranks=ranks, env=env or {}, timeout_seconds=timeout_seconds,
        memory_mb=memory_mb, cpus=cpus, gpu=gpu, queue=queue, purpose=purpose, control=control,
    )  # fmt: skip
    if enqueue:
        transaction.on_commit(lambda: enqueue_run(run))
    return run


def _check_queue_share(owner) -> None:
    """One user may not fill the queue: beyond the runs they have going, at most SANDBOX_MAX_QUEUED_PER_USER wait.
    The owner's row is locked (PostgreSQL) so two requests at once cannot both slip under the limit."""
    from django.conf import settings
    from django.contrib.auth import get_user_model

    list(get_user_model().objects.select_for_update().filter(pk=owner.pk).values_list("pk"))
    waiting = Run.objects.filter(owner=owner, status=Run.Status.QUEUED).count()
    if waiting >= settings.SANDBOX_MAX_QUEUED_PER_USER:
        raise RunRejected(
            f"queue: you already have {waiting} run(s) waiting to start; wait for one to start or cancel it"
        )


def enqueue_run(run: Run) -> None:
    from sandbox.tasks import execute_run

    execute_run.apply_async(args=[run.pk], queue=run.queue)


def cancel_run(run: Run) -> bool:
    """Queued runs end at once; running ones are killed by their worker within a second or two."""
    if Run.transition(run.pk, [Run.Status.QUEUED], Run.Status.CANCELLED):
        return True
    return Run.objects.filter(pk=run.pk, status__in=list(Run.ACTIVE)).update(cancel_requested=True) == 1


def request_diagnostic(run: Run, kind: str, user) -> RunDiagnostic:
    if kind not in RunDiagnostic.Kind.values:
        raise RunRejected(f"kind: one of {', '.join(RunDiagnostic.Kind.values)}")
    if run.status != Run.Status.RUNNING:
        raise RunRejected("diagnostics can only be taken while the program runs")
    return RunDiagnostic.objects.create(run=run, kind=kind, requested_by=user)


@transaction.atomic
def pause_run(run: Run) -> None:
    """Stop the ranks at their next reported step (a program that reports no steps never stops)."""
    _change_control(run, lambda control: control.update(now=control.get("now", 0) + 1))


@transaction.atomic
def release_run(run: Run, one_step: bool) -> None:
    """Let a paused run go on, to its end (``one_step=False``) or to its next reported step."""
    _change_control(run, lambda control: control.update(release=control.get("release", 0) + 1, step=one_step))


PAUSE_CONTROLS = ("pause", "step", "resume")


def control_run(run: Run, action: str) -> None:
    """One of ``PAUSE_CONTROLS``: ``pause`` at the next reported step, ``step`` on to the next one and pause
    again, ``resume``."""
    if action == "pause":
        pause_run(run)
    elif action in PAUSE_CONTROLS:
        release_run(run, one_step=action == "step")
    else:
        raise RunRejected(f"action: one of {', '.join(PAUSE_CONTROLS)}")


def _change_control(run: Run, change) -> None:
    locked = Run.objects.select_for_update().get(pk=run.pk)
    if locked.purpose not in pausing.PAUSABLE_PURPOSES:
        raise RunRejected("only practice runs pause; a graded run runs straight through")
    if locked.status not in (Run.Status.QUEUED, Run.Status.STARTING, Run.Status.RUNNING):
        raise RunRejected("the program is not running any more")
    control = dict(locked.control)
    change(control)
    Run.objects.filter(pk=run.pk).update(control=control, control_rev=F("control_rev") + 1)


def pause_state(run: Run) -> dict | None:
    """Where a running program is held, from its ranks' own reports: ``{"step", "reason", "ranks"}`` while
    at least one rank is paused, else None."""
    if run.status != Run.Status.RUNNING:
        return None
    latest: dict = {}
    # Oldest first, so each rank's last word wins; a run stepped through many times has many of these.
    recent = run.events.filter(kind__in=["paused", "resumed"]).order_by("-seq").values("kind", "rank", "data")[:64]
    for event in reversed(list(recent)):
        latest[event["rank"]] = event
    held = [event for event in latest.values() if event["kind"] == "paused"]
    if not held:
        return None
    first = min(held, key=lambda event: event["rank"] if isinstance(event["rank"], int) else -1)
    return {
        "step": first["data"].get("step"),
        "reason": str(first["data"].get("reason", "")),
        "ranks": sorted(event["rank"] for event in held if isinstance(event["rank"], int)),
    }

"""Where a lab run stands while it waits, runs and is graded, for the pages that follow it live.

Grading writes its stage into ``LabRun.progress`` as it goes (a plain UPDATE per stage, a handful per
grading), as a key with numbers rather than text: the reader's language is only known when a page asks.
Before grading the run's own row says enough (queue position, start time), so nothing is written then.
"""

from __future__ import annotations

import re

from django.utils import timezone
from django.utils.translation import gettext as _

from labs.models import LabRun
from sandbox.dispatch import queue_position
from sandbox.models import Run

MEASUREMENTS = "measurements"
GRADER_STARTING = "grader_starting"
GRADER_EVALUATING = "grader_evaluating"
CHECK = "check"
REFERENCE_MEMORY = "reference_memory"

# A live region announces every change; whole seconds would have a screen reader read the clock aloud.
RUNNING_STEP_SECONDS = 5


def record_stage(lab_run_id: int, stage: str, **details: int | str) -> None:
    LabRun.objects.filter(pk=lab_run_id).update(progress={"stage": stage, **details})


def grading_text(progress: dict) -> str:
    stage = progress.get("stage")
    if stage == GRADER_STARTING:
        return _("grading: starting the grader")
    if stage == GRADER_EVALUATING:
        return _("grading: evaluating the saved model on held-out data")
    if stage == REFERENCE_MEMORY:
        return _("grading: measuring the reference fix's memory on this seed (once per seed)")
    if stage == CHECK:
        return _("grading: check %(index)s of %(total)s: %(name)s") % {
            "index": progress.get("index", "?"),
            "total": progress.get("total", "?"),
            "name": progress.get("name", ""),
        }
    return _("grading: reading the run's measurements")


def stage_text(lab_run: LabRun, queue_position: int | None, paused: dict | None = None) -> str:
    """The stage of an active run in the active language; "" once the run has ended.

    ``queue_position``: queued runs that start before this one (``sandbox.dispatch.queue_position``).
    ``paused``: where the program is held (``sandbox.services.pause_state``), if it is.
    """
    run = lab_run.run
    if paused is not None and run.status == Run.Status.RUNNING:
        return _(
            "paused at step %(step)s (%(reason)s): take a stack dump or a memory snapshot, then resume or step"
        ) % {
            "step": paused["step"],
            "reason": pause_reason_text(paused["reason"]),
        }
    if run.status == Run.Status.QUEUED:
        if not queue_position:
            return _("queued: next to start")
        return _("queued: position %(position)s in the queue") % {"position": queue_position + 1}
    if run.status == Run.Status.STARTING:
        return _("starting the sandbox")
    if run.status == Run.Status.RUNNING:
        if run.started_at is None:
            return _("running")
        elapsed = max(0, int((timezone.now() - run.started_at).total_seconds()))
        return _("running, %(seconds)s s") % {"seconds": elapsed - elapsed % RUNNING_STEP_SECONDS}
    if run.status == Run.Status.GRADING:
        return grading_text(lab_run.progress or {})
    return ""


def current_stage(lab_run: LabRun) -> str:
    """:func:`stage_text`, asking the queue for the position only while the run waits in it."""
    run = lab_run.run
    return stage_text(lab_run, queue_position(run) if run.status == Run.Status.QUEUED else None)


_PAUSE_REASONS = [
    (re.compile(r"^at step (\d+)$"), lambda m: _("step %(step)s reached") % {"step": m[1]}),
    (re.compile(r"^memory over (\d+) MiB$"), lambda m: _("memory over %(mib)s MiB") % {"mib": m[1]}),
    (re.compile(r"^first non-finite loss$"), lambda m: _("first non-finite loss")),
    (re.compile(r"^asked$"), lambda m: _("you asked")),
    (re.compile(r"^stepped$"), lambda m: _("one step on")),
    (re.compile(r"^another rank paused$"), lambda m: _("another rank paused")),
]


def pause_reason_text(reason: str) -> str:
    """The harness's reasons ("at step 3, first non-finite loss") in the active language; anything else
    (a program writing its own pause files) is shown as it came."""
    parts = []
    for part in reason.split(", "):
        for pattern, text in _PAUSE_REASONS:
            match = pattern.match(part)
            if match:
                parts.append(text(match))
                break
        else:
            parts.append(part[:80])
    return ", ".join(parts)

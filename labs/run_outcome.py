"""What happened to a run, in the candidate's words.

A plain run is never "passed": only a graded fix passes. A run whose program exited 0 after
reporting a non-finite loss is "finished with non-finite loss", so a NaN lab's faulty run does not
read like a success.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from labs.models import LabRun
from sandbox.models import Run

NON_FINITE = ("nan", "inf", "-inf")


def reported_non_finite_loss(run: Run) -> bool:
    """Did the program report a NaN or infinite loss? Its own report: shown, never graded."""
    return run.events.filter(kind="metric", data__loss__in=NON_FINITE).exists()


def _nonzero_exits(run: Run) -> list[tuple[str, int]]:
    codes = sorted((str(rank), code) for rank, code in (run.exit_codes or {}).items() if code not in (0, None))
    if not codes and run.exit_code not in (0, None):
        codes = [("", run.exit_code)]
    return codes


def _how_it_ended(run: Run) -> str:
    if run.timed_out:
        return _("timed out")
    if run.oom_killed:
        return _("OOM-killed")
    nonzero = _nonzero_exits(run)
    if nonzero:
        code = nonzero[0][1]
        if len(nonzero) == 1 and nonzero[0][0] == "":
            return _("crashed (exit %(code)s)") % {"code": code}
        ranks = ", ".join(rank for rank, _code in nonzero)
        return _("crashed (exit %(code)s on rank %(ranks)s)") % {"code": code, "ranks": ranks}
    if reported_non_finite_loss(run):
        return _("finished with non-finite loss")
    return _("finished")


def run_outcome(lab_run: LabRun) -> str:
    run = lab_run.run
    active = {
        Run.Status.QUEUED: _("queued"),
        Run.Status.STARTING: _("starting"),
        Run.Status.RUNNING: _("running"),
        Run.Status.GRADING: _("grading the fix"),
    }
    if run.status in active:
        return active[run.status]
    if run.status == Run.Status.CANCELLED:
        return _("cancelled")
    if run.status == Run.Status.ERROR:
        return _("platform error, not counted against you")
    ended = _how_it_ended(run)
    if lab_run.kind == LabRun.Kind.FIX:
        if lab_run.passed:
            return _("fix passed")
        return _("fix not accepted: the program %(ended)s") % {"ended": ended}
    return ended

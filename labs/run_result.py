"""What grading knows about a finished run: the sandbox's ``RunResult``, and the program's own reports.

The runner hands its judge a ``RunResult`` measured outside the program. Where a judge is
called without one (a runner that predates the hook), :func:`recorded_result` rebuilds it from
the ``Run`` row and the launcher's own event kinds, never from anything a rank sends.
:func:`reported_by_program` reads the ranks' ``metric``/``counter`` events, for display only.
"""

from __future__ import annotations

from labs.checks import Reported
from sandbox.judging import RunResult, TreeSamples
from sandbox.models import Run, RunEvent


def recorded_result(run: Run) -> RunResult:
    tree = TreeSamples()
    samples = RunEvent.objects.filter(run=run, kind="memory").order_by("seq")
    for rank, t, data in samples.values_list("rank", "t", "data").iterator():
        tree.add(rank, t, data)
    end = RunEvent.objects.filter(run=run, kind="end", rank=None).order_by("-seq").first()
    duration = end.data.get("duration") if end else None
    if not isinstance(duration, (int, float)) or isinstance(duration, bool):
        duration = run.duration_seconds
    return RunResult(
        exit_code=run.exit_code, exit_codes={str(k): v for k, v in (run.exit_codes or {}).items()},
        timed_out=run.timed_out, oom_killed=run.oom_killed, cancelled=run.status == Run.Status.CANCELLED,
        duration=float(duration) if duration is not None else None, memory=tree.memory, cpu=tree.cpu, output_full=False,
        artifacts_skipped=[], service_counts=_service_counts(end.data.get("services") if end else None),
    )  # fmt: skip


def _service_counts(services) -> dict[str, dict[str, int]]:
    """What the launcher's services counted (its ``end`` event, never a rank's)."""
    if not isinstance(services, dict):
        return {}
    return {
        str(name): {str(k): v for k, v in entry.items() if isinstance(v, int) and not isinstance(v, bool)}
        for name, entry in services.items()
        if isinstance(entry, dict)
    }


def reported_by_program(run: Run) -> Reported:
    """Losses and counters the ranks sent. Any code in the program can print these lines: display only."""
    reported = Reported()
    counters: dict[tuple[int | None, str], float] = {}
    events = RunEvent.objects.filter(run=run, kind__in=("metric", "counter")).order_by("seq")
    for kind, rank, data in events.values_list("kind", "rank", "data").iterator():
        if kind == "metric" and data.get("loss") is not None:
            value = _as_float(data["loss"])
            if value is not None:
                reported.losses.append(value)
        elif kind == "counter" and isinstance(data.get("name"), str):
            value = _as_float(data.get("value"))
            if value is not None:
                counters[(rank, data["name"])] = value  # the runtime sends running totals: the last one stands
    for (_, name), value in counters.items():
        reported.counters[name] = reported.counters.get(name, 0.0) + value
    return reported


def _as_float(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return None

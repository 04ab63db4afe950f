"""The one hook from the sandbox to whatever judges a finished run.

The sandbox knows nothing of grading: an app registers a judge for a run purpose (labs does
so for ``grade`` and ``validate`` in ``labs.apps``), and the runner hands it the run's id and
what was measured outside the program. A judge returns whether the run passed; an exception
it raises ends the run ``error`` (a platform fault).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RunResult:
    exit_code: int | None  # the launcher's overall exit status
    exit_codes: dict[str, int | None]  # per rank, from the launcher's end event
    timed_out: bool  # the worker's own deadline
    oom_killed: bool  # from the container runtime
    cancelled: bool
    duration: float | None  # seconds, measured by the launcher/worker
    # (t, bytes) sampled outside the ranks: the container's anonymous + shared (tmpfs) memory.
    memory: list[tuple[float, int]]
    output_full: bool  # the output folder ran out of space
    artifacts_skipped: list[str]


Judge = Callable[[int, RunResult], bool]
_judges: dict[str, Judge] = {}


def register_judge(purpose: str, judge: Judge) -> None:
    _judges[purpose] = judge


def judge_for(purpose: str) -> Judge | None:
    return _judges.get(purpose)

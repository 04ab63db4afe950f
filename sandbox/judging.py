"""What the sandbox hands to whoever judges a finished run, and how a judge is registered.

The sandbox measures; it does not grade. An app above it (labs) registers a judge for the run
purposes it owns, from its ``AppConfig.ready``. When a run of such a purpose ends, the runner moves it
to ``grading``, calls the judge in the same delivery with the run's :class:`RunResult`, and records
the verdict; a judge that raises ends the run ``error`` (a platform fault, never the candidate's).

Every field of :class:`RunResult` comes from a place the candidate's code cannot write: the
launcher's own events (it is the container's PID 1 and not dumpable, see
``faultline_harness/guard.py``), the container runtime, or the worker's own clock. What a program
reports about itself (losses, counters) is not in here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RunResult:
    exit_code: int | None  # the launcher's overall status
    exit_codes: dict[str, int | None]  # per rank, from the launcher's end event
    timed_out: bool  # killed at the worker's deadline
    oom_killed: bool  # from the container runtime
    cancelled: bool
    duration: float | None  # seconds, from the launcher's end event (else the worker's clock)
    # (t, bytes) sampled outside the ranks: the container's anonymous + shared (tmpfs, /dev/shm) memory less
    # the launcher's own under Docker; the ranks' process trees summed under the local process backend.
    memory: list[tuple[float, int]] = field(default_factory=list)
    # (t, CPU seconds used so far) from the same place as ``memory``: a clock of the work done that sleeping
    # does not advance, so a memory check's warm-up cannot be stretched over the run by a slow program.
    cpu: list[tuple[float, float]] = field(default_factory=list)
    memory_source: str = ""  # "container" | "process-tree"
    peak_memory_bytes: int | None = None
    output_full: bool = False  # the output folder ran out of space
    artifacts_skipped: list[str] = field(default_factory=list)
    # What each service in the launcher counted, from its end event, e.g.
    # ``{"record_store": {"reads": 12288, "records": 2048}}`` (reads completed, different records served) or
    # ``{"checkpoint_store": {"saves": 1, "loads": 2, "loads_rank0": 1, "loads_rank1": 1, "min_rank_loads": 1,
    # "max_load_delay_ms": 40}}`` (loads counted for the rank whose process connected, as the kernel reports it).
    service_counts: dict[str, dict[str, int]] = field(default_factory=dict)


class TreeSamples:
    """The ranks' process trees as the launcher's ``memory`` events sample them, summed over ranks: each
    rank's latest reading stands until its next. Built while a run streams (the runner) and again from the
    stored events (labs' fallback when a judge is called without a result), by this one piece of code."""

    def __init__(self) -> None:
        self.memory: list[tuple[float, int]] = []
        self.cpu: list[tuple[float, float]] = []
        self._bytes: dict[int, int] = {}
        self._cpu: dict[int, float] = {}

    def add(self, rank: int, t: float, data: dict) -> None:
        size = _count(data.get("pss_bytes")) or _count(data.get("rss_bytes"))
        # A rank caught while exiting reads as 0 bytes: not a measurement, and one such sample at the end
        # would flatten a leak.
        if size > 0:
            self._bytes[rank] = size
            self.memory.append((t, sum(self._bytes.values())))
        used = data.get("cpu_seconds")
        if isinstance(used, (int, float)) and not isinstance(used, bool):
            # A tree's time only grows; a sample that reads less lost a child nobody reaped yet.
            self._cpu[rank] = max(self._cpu.get(rank, 0.0), float(used))
            self.cpu.append((t, sum(self._cpu.values())))


def _count(value) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


Judge = Callable[[int, RunResult], bool]
_judges: dict[str, Judge] = {}


def register_judge(purpose: str, judge: Judge) -> None:
    """``judge(run_id, result)`` returns True for passed, False for failed."""
    _judges[purpose] = judge


def judge_for(purpose: str) -> Judge | None:
    return _judges.get(purpose)

"""Pausing a practice run at a step, worker side: what may be asked, and the time a pause gives back.

The ranks do the pausing (``faultline_harness/pausing.py``); the platform keeps the settings on the run
(``Run.control``, bumped ``control_rev`` on every change), hands the first ones to the ranks when the run
starts and later ones through ``diag control``. A paused run is not making the candidate wait for the
deadline: the worker moves the deadline on by the time spent paused, at most ``PAUSE_BUDGET_S``.
Graded and validation runs are never paused by the platform and never get time back.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from sandbox.harness.faultline_harness import protocol

PAUSABLE_PURPOSES = frozenset({"run"})
PAUSE_BUDGET_S = 300  # the most a run's deadline moves on for pauses, all of them together
IDLE_SECONDS = 120  # a pause nobody touches (no resume, step, tool) for this long lets the program go on
MAX_MEMORY_MIB = 1024 * 1024


class BadConditions(ValueError):
    """``field: what is wrong``: shown to whoever chose the conditions."""


def conditions(data: Any) -> dict:
    """Validated pause conditions from a request: ``at_step`` (≥ 0), ``on_nonfinite`` (bool),
    ``memory_mib`` (1 … 1048576); absent or null means not set. Unknown fields are refused."""
    if data in (None, ""):
        return {}
    if not isinstance(data, dict):
        raise BadConditions("pause: an object with at_step, on_nonfinite and/or memory_mib")
    unknown = sorted(set(data) - {"at_step", "on_nonfinite", "memory_mib"})
    if unknown:
        raise BadConditions(f"pause: unknown field(s) {', '.join(unknown)}; use at_step, on_nonfinite, memory_mib")
    clean: dict = {}
    at_step = data.get("at_step")
    if at_step not in (None, ""):
        if not _whole(at_step) or int(at_step) < 0:
            raise BadConditions("pause.at_step: a whole number of steps, 0 or more")
        clean["at_step"] = int(at_step)
    on_nonfinite = data.get("on_nonfinite", False)
    if not isinstance(on_nonfinite, bool):
        raise BadConditions("pause.on_nonfinite: true or false")
    if on_nonfinite:
        clean["on_nonfinite"] = True
    memory = data.get("memory_mib")
    if memory not in (None, ""):
        if not _whole(memory) or not 1 <= int(memory) <= MAX_MEMORY_MIB:
            raise BadConditions(f"pause.memory_mib: a whole number of MiB between 1 and {MAX_MEMORY_MIB}")
        clean["memory_mib"] = int(memory)
    return clean


def _whole(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and value.strip().isdigit()


def settings_for_ranks(control: dict, touch: int = 0) -> dict:
    """What the ranks read: the run's settings plus the idle time-out, and ``touch``, which a tool used
    during a pause bumps so that the pause is not idle."""
    return {**control, "idle_seconds": IDLE_SECONDS, "touch": touch}


class PauseClock:
    """Time during which at least one rank said it was paused, from the run's own events. Reported by the
    program, so it only ever buys a practice run time, capped at ``PAUSE_BUDGET_S``."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._paused: set[object] = set()
        self._since: float | None = None
        self._total = 0.0

    def observe(self, event: dict) -> None:
        kind = event.get("kind")
        if kind not in (protocol.PAUSED, protocol.RESUMED):
            return
        rank = event.get("rank")
        with self._lock:
            if kind == protocol.PAUSED:
                if not self._paused:
                    self._since = self._clock()
                self._paused.add(rank)
            elif rank in self._paused:
                self._paused.discard(rank)
                if not self._paused and self._since is not None:
                    self._total += self._clock() - self._since
                    self._since = None

    def seconds(self) -> float:
        with self._lock:
            running = self._clock() - self._since if self._since is not None else 0.0
            return min(self._total + running, PAUSE_BUDGET_S)

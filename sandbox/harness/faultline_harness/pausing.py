"""Hold a rank at a reported step so the candidate's tools can be used at leisure.

A run that lasts two seconds is over before anyone presses "stack dump". The candidate can therefore ask
for a pause (before the run: at step N, at the first non-finite loss, once the rank's memory passes X MiB;
while it runs: at the next step), and the rank stops inside ``report.step`` -- a safe point: between two
steps, holding no collective -- until it is told to resume, to take one more step, or nobody has touched
the run for ``idle_seconds``. While it waits, stack dumps and memory snapshots work as usual (the main
thread sleeps in short slices, so Python signal handlers run; SIGUSR2 is served by the service thread).

Every rank follows the first one that stops: it writes ``pause.json`` in the run folder, and the others
stop at their own next step. Settings come from ``control.json`` in the run folder, which the worker
rewrites (``python3 -m faultline_harness.diag control``); until it exists, from ``FAULTLINE_PAUSE``.

The program could write those files itself: that only pauses the program. What the platform measures is
unaffected, and a graded run gets no time back for a pause.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .procfs import anon_bytes
from .protocol import CONTROL_FILE, ENV_PAUSE, PAUSED, RESUMED
from .report import note

PAUSE_FILE = "pause.json"
POLL_S = 0.1
DEFAULT_IDLE_S = 120.0
MIB = 1024 * 1024


@dataclass
class Control:
    at_step: int | None = None
    on_nonfinite: bool = False
    memory_mib: int | None = None
    now: int = 0  # how many "pause now" requests there have been
    release: int = 0  # how many resume/step requests there have been
    step: bool = False  # the latest release asks for one more step only
    idle_seconds: float = DEFAULT_IDLE_S

    @property
    def wants_anything(self) -> bool:
        return self.at_step is not None or self.on_nonfinite or self.memory_mib is not None or self.now > 0


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse(data: Any) -> Control | None:
    """The settings in ``data``, leniently: a field of the wrong type is treated as not set."""
    if not isinstance(data, dict):
        return None
    idle = data.get("idle_seconds")
    return Control(
        at_step=_int_or_none(data.get("at_step")),
        on_nonfinite=data.get("on_nonfinite") is True,
        memory_mib=_int_or_none(data.get("memory_mib")),
        now=_int_or_none(data.get("now")) or 0,
        release=_int_or_none(data.get("release")) or 0,
        step=data.get("step") is True,
        idle_seconds=float(idle) if isinstance(idle, (int, float)) and 1 <= idle <= 3600 else DEFAULT_IDLE_S,
    )


@dataclass
class Pauser:
    """One rank's pause state; ``at_step`` is called from ``report.step`` in the rank's own process."""

    run_dir: Path
    rank: str
    emit: Callable[[dict], None]
    env_text: str = ""
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    memory_bytes: Callable[[], int] = anon_bytes
    _key: tuple[int, int, int] | None = None
    _control: Control | None = None
    _fired: set[tuple[str, int]] = field(default_factory=set)
    _now_seen: int = 0
    _release_seen: int = 0
    _stepping: bool = False
    _pause_seen: int = 0

    def __post_init__(self) -> None:
        if self.env_text:
            try:
                self._control = parse(json.loads(self.env_text))
            except ValueError:
                self._control = None

    # ---- settings ------------------------------------------------------------------------------------

    def _read(self) -> tuple[Control | None, bool]:
        """The current settings, and whether the file changed since the last look (one stat when not)."""
        path = self.run_dir / CONTROL_FILE
        try:
            st = path.stat()
        except OSError:
            return self._control, False
        # Every write replaces the file, so a new inode shows a change even within one timestamp tick.
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key == self._key:
            return self._control, False
        self._key = key
        try:
            self._control = parse(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass  # caught mid-replace or garbled: keep the last good settings
        return self._control, True

    def _peer_pause(self) -> tuple[int, int]:
        """The latest pause any rank began: its id, and how many releases there had been before it."""
        try:
            data = json.loads((self.run_dir / PAUSE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0, 0
        if not isinstance(data, dict):
            return 0, 0
        return _int_or_none(data.get("id")) or 0, _int_or_none(data.get("release")) or 0

    # ---- the step hook -------------------------------------------------------------------------------

    def _own_reason(self, control: Control, step: int, loss: Any) -> str | None:
        reasons = []
        if self._stepping:
            reasons.append("stepped")
        if control.now > self._now_seen:
            self._now_seen = control.now
            reasons.append("asked")
        if control.at_step is not None and step >= control.at_step and ("step", control.at_step) not in self._fired:
            self._fired.add(("step", control.at_step))
            reasons.append(f"at step {control.at_step}")
        if control.on_nonfinite and ("nonfinite", 0) not in self._fired and not _finite(loss):
            self._fired.add(("nonfinite", 0))
            reasons.append("first non-finite loss")
        if control.memory_mib is not None and ("memory", control.memory_mib) not in self._fired:
            if self.memory_bytes() > control.memory_mib * MIB:
                self._fired.add(("memory", control.memory_mib))
                reasons.append(f"memory over {control.memory_mib} MiB")
        return ", ".join(reasons) or None

    def at_step(self, step: int, loss: Any) -> None:
        control, _ = self._read()
        if control is None or not (control.wants_anything or self._stepping):
            return
        reason = self._own_reason(control, step, loss)
        peer, peer_release = self._peer_pause()
        if peer > self._pause_seen:
            # Following a pause that began elsewhere: a release sent since then (before this rank got
            # here) lets this rank through at once, so no rank waits for a resume that was already given.
            pause_id, reason, released_at = peer, reason or "another rank paused", peer_release
        elif reason is not None:
            # Only a release sent after this pause began lets it go; older ones were spent on earlier pauses.
            pause_id, released_at = peer + 1, max(control.release, self._release_seen)
            _write_json(
                self.run_dir / PAUSE_FILE, {"id": pause_id, "rank": self.rank, "step": step, "release": released_at}
            )
        else:
            return
        self._pause_seen = pause_id
        self._stepping = False
        self._spend_conditions(control)
        self._hold(step, reason, released_at)

    def _spend_conditions(self, control: Control) -> None:
        # A condition stops the run once, not once per rank: ranks that share no collective drift apart,
        # and one that follows a peer's pause must not stop again when it meets the same condition itself.
        if control.at_step is not None:
            self._fired.add(("step", control.at_step))
        if control.on_nonfinite:
            self._fired.add(("nonfinite", 0))
        if control.memory_mib is not None:
            self._fired.add(("memory", control.memory_mib))
        self._now_seen = max(self._now_seen, control.now)

    def _hold(self, step: int, reason: str, released_at: int) -> None:
        self.emit({"kind": PAUSED, "step": step, "reason": reason})
        note(f"paused at step {step} ({reason}); waiting for resume or step")
        last_change = self.clock()
        how = "idle time-out"
        while True:
            self.sleep(POLL_S)
            current, changed = self._read()
            if changed:
                last_change = self.clock()
            if current is None:
                how = "settings removed"
                break
            control = current
            if control.release > released_at:
                self._release_seen = control.release
                self._stepping = control.step
                how = "step" if control.step else "resume"
                break
            if self.clock() - last_change >= control.idle_seconds:
                self._release_seen = control.release
                break
        self.emit({"kind": RESUMED, "step": step, "how": how})
        note(f"resumed at step {step} ({how})")


def _finite(loss: Any) -> bool:
    if loss is None:
        return True
    if isinstance(loss, str):  # report.step sends non-finite values as "nan", "inf", "-inf"
        return loss.strip().lower() not in ("nan", "inf", "-inf", "+inf")
    try:
        return math.isfinite(float(loss))
    except (TypeError, ValueError):
        return True


def _replace_json(path: Path, data: dict) -> None:
    """Write the file next to ``path`` and rename it over: a reader never sees half of it."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def _write_json(path: Path, data: dict) -> None:
    try:
        _replace_json(path, data)
    except OSError:
        pass  # peers then stop at their own triggers, or in the next collective


def write_control(run_dir: Path, data: dict) -> None:
    """Replace the run's settings (``diag control``)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    _replace_json(run_dir / CONTROL_FILE, data)


def from_environment(run_dir: Path, rank: str, emit: Callable[[dict], None]) -> Pauser:
    return Pauser(run_dir=run_dir, rank=rank, emit=emit, env_text=os.environ.get(ENV_PAUSE, ""))

"""Hold a rank at a reported step so the candidate's tools can be used at leisure.

A run that lasts two seconds is over before anyone presses "stack dump". The candidate can therefore ask
for a pause (before the run: at step N, at the first non-finite loss, once the rank's memory passes X MiB;
while it runs: at the next step), and the rank stops inside ``report.step`` -- a safe point: between two
steps, holding no collective -- until it is told to resume, to take one more step, or nobody has touched
the run for ``idle_seconds``. While it waits, stack dumps and memory snapshots work as usual (the main
thread sleeps in short slices, so Python signal handlers run; SIGUSR2 is served by the service thread).

Every rank stops at the same step: the first rank to meet a condition announces the pause in
``pause.json`` in the run folder (see ``Pauser.at_step`` for which step), and the others stop there too.
Settings come from ``control.json`` in the run folder, which the worker rewrites
(``python3 -m faultline_harness.diag control``); until it exists, from ``FAULTLINE_PAUSE``.

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
from .protocol import CONTROL_FILE, ENV_PAUSE, ENV_WORLD_SIZE, PAUSED, RESUMED
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
class Announced:
    """A pause as one rank announced it in ``pause.json``: every rank stops at ``step`` or at its first
    reported step after it, and a release counted above ``release`` lets it go."""

    id: int = 0
    step: int = 0
    release: int = 0
    reason: str = ""

    def as_dict(self, rank: str) -> dict:
        return {"id": self.id, "step": self.step, "release": self.release, "reason": self.reason, "rank": rank}


@dataclass
class Pauser:
    """One rank's pause state; ``at_step`` is called from ``report.step`` in the rank's own process."""

    run_dir: Path
    rank: str
    emit: Callable[[dict], None]
    env_text: str = ""
    world_size: int = 1
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

    def _announced(self) -> Announced:
        """The latest pause any rank announced (id 0: none)."""
        try:
            data = json.loads((self.run_dir / PAUSE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Announced()
        if not isinstance(data, dict):
            return Announced()
        return Announced(
            id=_int_or_none(data.get("id")) or 0,
            step=_int_or_none(data.get("step")) or 0,
            release=_int_or_none(data.get("release")) or 0,
            reason=str(data.get("reason", ""))[:200],
        )

    # ---- the step hook -------------------------------------------------------------------------------

    def _own_reasons(self, control: Control, step: int, loss: Any) -> tuple[list[str], list[str]]:
        """Conditions met at this step: (those every rank meets at the same step, those only this rank sees)."""
        shared, own = [], []
        if self._stepping:
            shared.append("stepped")
        if control.at_step is not None and step >= control.at_step and ("step", control.at_step) not in self._fired:
            self._fired.add(("step", control.at_step))
            shared.append(f"at step {control.at_step}")
        if control.now > self._now_seen:
            self._now_seen = control.now
            own.append("asked")
        if control.on_nonfinite and ("nonfinite", 0) not in self._fired and not _finite(loss):
            self._fired.add(("nonfinite", 0))
            own.append("first non-finite loss")
        if control.memory_mib is not None and ("memory", control.memory_mib) not in self._fired:
            if self.memory_bytes() > control.memory_mib * MIB:
                self._fired.add(("memory", control.memory_mib))
                own.append(f"memory over {control.memory_mib} MiB")
        return shared, own

    def at_step(self, step: int, loss: Any) -> None:
        control, _ = self._read()
        if control is None or not (control.wants_anything or self._stepping):
            return
        shared, own = self._own_reasons(control, step, loss)
        announced = self._announced()
        if announced.id <= self._pause_seen and (shared or own):
            # Ranks in lockstep (one collective per step) must stop at the same step, or the one that went
            # on waits in the next collective for the one that stopped, until its timeout kills it. A
            # condition every rank meets at this very step stops them here. One only this rank sees (a NaN
            # in its own loss, its memory, a request it read first) is announced for the next step: a peer
            # cannot be past that one, since its next collective needs this rank.
            here = bool(shared) or self.world_size == 1
            announced = Announced(
                id=announced.id + 1,
                step=step if here else step + 1,
                release=max(control.release, self._release_seen),
                reason=", ".join(shared + own),
            )
            _write_json(self.run_dir / PAUSE_FILE, announced.as_dict(self.rank))
            self._spend_conditions(control)
        if announced.id <= self._pause_seen or step < announced.step:
            return
        # A release sent after the announcement, before this rank got here, lets it through at once: no rank
        # waits for a resume that was already given. Older releases were spent on earlier pauses.
        self._pause_seen = announced.id
        self._stepping = False
        self._spend_conditions(control)
        self._hold(step, announced.reason or "another rank paused", announced.release)

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
            # Never None here: a pause began from settings, and the last good ones are kept.
            control, changed = self._read()
            if changed:
                last_change = self.clock()
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
    try:
        world_size = max(1, int(os.environ.get(ENV_WORLD_SIZE, "1")))
    except ValueError:
        world_size = 1
    return Pauser(run_dir=run_dir, rank=rank, emit=emit, env_text=os.environ.get(ENV_PAUSE, ""), world_size=world_size)

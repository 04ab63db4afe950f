"""Helpers for the lab-harness tests: run the launcher as a subprocess and watch its stdout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HARNESS_DIR = Path(__file__).resolve().parents[3] / "sandbox" / "harness"
if str(HARNESS_DIR) not in sys.path:
    sys.path.insert(0, str(HARNESS_DIR))

TELEMETRY = "@@fl "


def harness_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAULTLINE_")}
    env["PYTHONPATH"] = str(HARNESS_DIR)
    env.update(extra)
    return env


@dataclass
class LauncherRun:
    proc: subprocess.Popen[str]
    root: Path
    lines: list[str] = field(default_factory=list)
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _reader: threading.Thread | None = None

    def __post_init__(self) -> None:
        self._reader = threading.Thread(target=self._collect, daemon=True)
        self._reader.start()

    @property
    def out_dir(self) -> Path:
        return self.root / "out"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    def _collect(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def snapshot(self) -> list[str]:
        with self._cond:
            return list(self.lines)

    def wait_for_line(self, predicate: Callable[[str], bool], timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    if predicate(line):
                        return line
                seen = len(self.lines)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.proc.poll() is not None and seen == len(self.lines)):
                    tail = "\n".join(self.lines[-30:])
                    raise AssertionError(f"expected line did not appear; last lines:\n{tail}")
                self._cond.wait(min(remaining, 0.2))

    def wait_for_event(self, kind: str, match: Callable[[dict[str, Any]], bool] = lambda e: True, **kw) -> dict:
        line = self.wait_for_line(lambda s: (e := parse(s)) is not None and e["kind"] == kind and match(e), **kw)
        event = parse(line)
        assert event is not None
        return event

    def wait(self, timeout: float = 60.0) -> int:
        code = self.proc.wait(timeout)
        if self._reader is not None:
            self._reader.join(10)
        return code

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        found = [e for e in map(parse, self.snapshot()) if e is not None]
        return [e for e in found if kind is None or e["kind"] == kind]

    def output(self, rank: int) -> list[str]:
        prefix = f"[r{rank}] "
        return [line[len(prefix) :] for line in self.snapshot() if line.startswith(prefix)]

    def pids(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "pids.json").read_text())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def parse(line: str) -> dict[str, Any] | None:
    if not line.startswith(TELEMETRY):
        return None
    return json.loads(line[len(TELEMETRY) :])


def start_launcher(
    root: Path, program: str, ranks: int = 1, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> LauncherRun:
    program_dir = root / "program"
    program_dir.mkdir(parents=True, exist_ok=True)
    (program_dir / "main.py").write_text(textwrap.dedent(program))
    command = [
        sys.executable,
        "-m",
        "faultline_harness.launch",
        "--program-dir",
        str(program_dir),
        "--entry",
        "main.py",
        "--ranks",
        str(ranks),
        "--output-dir",
        str(root / "out"),
        *args,
    ]
    proc = subprocess.Popen(
        command,
        cwd=root,
        env=harness_env(**(env or {})),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    return LauncherRun(proc=proc, root=root)


def process_gone(pid: int) -> bool:
    """True when the pid no longer names a live process (zombies awaiting init count as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def run_diag(run_dir: Path, kind: str, timeout: float = 3.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faultline_harness.diag", kind, "--run-dir", str(run_dir), "--timeout", str(timeout)],
        env=harness_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def launch(tmp_path: Path):
    """Start the launcher on a program; anything still running is stopped after the test."""
    runs: list[LauncherRun] = []

    def _launch(program: str, **kwargs: Any) -> LauncherRun:
        run = start_launcher(tmp_path / f"run{len(runs)}", program, **kwargs)
        runs.append(run)
        return run

    yield _launch
    for run in runs:
        run.stop()

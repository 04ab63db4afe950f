"""Ask a running lab program for diagnostics.

    python3 -m faultline_harness.diag stacks --run-dir RUNDIR [--timeout 3]
    python3 -m faultline_harness.diag memory --run-dir RUNDIR [--timeout 5]
    python3 -m faultline_harness.diag control --run-dir RUNDIR --settings JSON

``stacks`` sends SIGUSR1 (faulthandler dump of every thread) and, when py-spy is installed, adds its
view as well; ``memory`` sends SIGUSR2 (a memory snapshot); ``control`` replaces the run's pause settings
(see pausing.py), which the ranks read at their next reported step. Exit codes: 0 when at least one rank
answered, 1 when none did, 3 when the run is not running.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import pausing, procfs
from .protocol import memory_file_name, stacks_file_name

EXIT_OK = 0
EXIT_NO_ANSWER = 1
EXIT_NOT_RUNNING = 3
PY_SPY_TIMEOUT_S = 10.0
POLL_S = 0.05
SETTLE_S = 0.2  # a dump is considered complete once its size has not changed for this long


@dataclass
class Target:
    rank: str
    pid: int
    path: Path
    problem: str | None = None  # why this rank was not (or could not be) asked


def load_ranks(run_dir: Path) -> tuple[list[tuple[str, int]], str | None]:
    """Live (rank, pid) pairs from pids.json, or an explanation of why there are none."""
    pids_file = run_dir / "pids.json"
    try:
        data = json.loads(pids_file.read_text(encoding="utf-8"))
        ranks = {str(k): int(v) for k, v in data["ranks"].items()}
        ticks = {str(k): v for k, v in data.get("start_ticks", {}).items()}
    except FileNotFoundError:
        return [], f"no program is running: {pids_file} does not exist (the ranks have not started)"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return [], f"no program is running: {pids_file} is unreadable ({exc})"
    if data.get("ended"):
        return [], "no program is running: the run has already finished"
    live = []
    for rank, pid in sorted(ranks.items(), key=lambda item: int(item[0]) if item[0].isdigit() else 0):
        stat = procfs.read_stat(pid)
        if not procfs.is_alive(stat):
            continue
        expected = ticks.get(rank)
        if expected is not None and stat is not None and stat.start_ticks != expected:
            continue  # the pid now belongs to some other process
        live.append((rank, pid))
    if not live:
        return [], "no program is running: none of the rank processes are alive any more"
    return live, None


def _ready_for(pid: int, signum: int, accept_blocked: bool) -> bool:
    masks = procfs.signal_masks(pid)
    if masks is None:
        return False
    caught, blocked = masks
    return procfs.has_signal(caught, signum) or (accept_blocked and procfs.has_signal(blocked, signum))


def request_dumps(
    live: list[tuple[str, int]],
    diag_dir: Path,
    signum: int,
    file_name: Callable[[str], str],
    timeout: float,
    accept_blocked: bool,
) -> list[Target]:
    """Truncate each rank's file, signal the rank, and wait for the files to fill in."""
    deadline = time.monotonic() + timeout
    targets = [Target(rank, pid, diag_dir / file_name(rank)) for rank, pid in live]
    pending: list[Target] = []
    for target in targets:
        # Both signals terminate a process that has no handler, so never send one to a rank whose
        # runtime has not (yet) installed it; a rank still starting up gets until the deadline.
        while not _ready_for(target.pid, signum, accept_blocked):
            if time.monotonic() >= deadline or not procfs.is_alive(procfs.read_stat(target.pid)):
                target.problem = "the harness handler is not installed in this process; not signalled"
                break
            time.sleep(POLL_S)
        if target.problem:
            continue
        try:
            diag_dir.mkdir(parents=True, exist_ok=True)
            with open(target.path, "w", encoding="utf-8"):
                pass
            os.kill(target.pid, signum)
        except ProcessLookupError:
            target.problem = "the process exited before it could be asked"
            continue
        except OSError as exc:
            target.problem = f"could not signal it: {exc}"
            continue
        pending.append(target)

    sizes: dict[int, tuple[int, float]] = {}
    while pending and time.monotonic() < deadline:
        for target in list(pending):
            try:
                size = target.path.stat().st_size
            except OSError:
                size = 0
            if size == 0:
                continue
            last_size, since = sizes.get(target.pid, (-1, time.monotonic()))
            if size != last_size:
                sizes[target.pid] = (size, time.monotonic())
            elif time.monotonic() - since >= SETTLE_S:
                pending.remove(target)
        time.sleep(POLL_S)
    for target in pending:
        if target.pid not in sizes:
            target.problem = f"no answer within {timeout:g} s"
    return targets


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").replace("\x00", "")
    except OSError as exc:
        return f"(could not read {path}: {exc})"


def print_dumps(targets: list[Target]) -> int:
    answered = 0
    for target in targets:
        print(f"=== rank {target.rank} (pid {target.pid}) ===")
        if target.problem:
            print(f"(nothing: {target.problem})")
            continue
        text = _read(target.path).rstrip("\n")
        if text:
            answered += 1
            print(text)
        else:
            print("(empty dump)")
    return answered


def run_py_spy(targets: list[Target]) -> None:
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        return
    for target in targets:
        print(f"=== py-spy rank {target.rank} ===")
        try:
            done = subprocess.run(
                [py_spy, "dump", "--pid", str(target.pid)],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=PY_SPY_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            print(f"py-spy failed: no answer within {PY_SPY_TIMEOUT_S:g} s")
            continue
        except OSError as exc:
            print(f"py-spy failed: {exc}")
            continue
        if done.returncode == 0:
            print(done.stdout.rstrip("\n"))
        else:
            lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            print(f"py-spy failed (exit {done.returncode}): {lines[-1] if lines else 'no output'}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m faultline_harness.diag", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    stacks = sub.add_parser("stacks", help="Python stacks of every thread of every rank")
    stacks.add_argument("--run-dir", required=True)
    stacks.add_argument("--timeout", type=float, default=3.0)
    memory = sub.add_parser("memory", help="memory snapshot of every rank")
    memory.add_argument("--run-dir", required=True)
    memory.add_argument("--timeout", type=float, default=5.0)
    control = sub.add_parser("control", help="replace the run's pause settings (a JSON object)")
    control.add_argument("--run-dir", required=True)
    control.add_argument("--settings", required=True)
    return parser


def write_settings(run_dir: Path, text: str) -> int:
    try:
        data = json.loads(text)
    except ValueError as exc:
        print(f"control: --settings is not JSON ({exc})")
        return EXIT_NO_ANSWER
    if pausing.parse(data) is None:
        print("control: --settings must be a JSON object")
        return EXIT_NO_ANSWER
    try:
        pausing.write_control(run_dir, data)
    except OSError as exc:
        print(f"control: could not write the settings: {exc}")
        return EXIT_NO_ANSWER
    print("settings written")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run_dir = Path(args.run_dir)
    if args.command == "control":
        # Written even when no rank runs yet: ranks starting later read it at their first step.
        return write_settings(run_dir, args.settings)
    live, problem = load_ranks(run_dir)
    if problem:
        print(problem)
        return EXIT_NOT_RUNNING
    diag_dir = run_dir / "diag"
    if args.command == "stacks":
        targets = request_dumps(live, diag_dir, signal.SIGUSR1, stacks_file_name, args.timeout, accept_blocked=False)
    else:
        # The rank runtime blocks SIGUSR2 and collects it on a helper thread, so "blocked" means "handled".
        targets = request_dumps(live, diag_dir, signal.SIGUSR2, memory_file_name, args.timeout, accept_blocked=True)
    answered = print_dumps(targets)
    if args.command == "stacks":
        run_py_spy([t for t in targets if procfs.is_alive(procfs.read_stat(t.pid))])
    sys.stdout.flush()
    return EXIT_OK if answered else EXIT_NO_ANSWER


if __name__ == "__main__":
    sys.exit(main())

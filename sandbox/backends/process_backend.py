"""Local process backend: the same harness in a child process group on this machine.

NOT ISOLATED — single-user use only. What it can honestly enforce: the wall-clock
deadline (the whole process tree is killed), a memory ceiling by polling the
tree's RSS (reported as OOM-killed), file-size and open-file rlimits, no core
dumps, capped output, artifacts copied without following links. What it cannot:
network access, the filesystem outside its folder, a pids limit, or processes
that escape with setsid/double-fork.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from sandbox.backends.base import (
    ExecutionResult,
    Sandbox,
    read_artifacts_from_tar,
)
from sandbox.proctree import tree_rss_bytes

HARNESS_DIR = Path(__file__).resolve().parents[1] / "harness"
# The child sees none of the platform's environment (secrets, DATABASE_URL...).
PASS_THROUGH_ENV = ("PATH", "LANG", "LC_ALL", "HOME", "TZ")


class ProcessSandbox(Sandbox):
    name = "process"
    isolated = False

    def prepare(self) -> None:
        self.root = self.make_run_folder()
        for sub in ("out", "cwd", "run"):
            (self.root / sub).mkdir()
        self.proc: subprocess.Popen | None = None
        self._killed = threading.Event()
        self._started_at = 0.0

    def start(self) -> None:
        env = _harness_env()
        env.update({k: str(v) for k, v in self.program.env.items()})
        env["PYTHONUNBUFFERED"] = "1"
        limits = self.limits
        # A run sees the one GPU it holds, or none: without this every run on this machine would use every
        # GPU, whatever the worker's slots gave it (Docker gets the same from its device request).
        env["CUDA_VISIBLE_DEVICES"] = str(limits.gpu_index) if limits.gpu and limits.gpu_index is not None else ""

        def set_limits() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes))
            resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self._started_at = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, *self.harness_command(str(self.root))],
            cwd=self.root / "cwd",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=set_limits,
        )
        threading.Thread(target=self._watch_memory, name="sandbox-memory-watch", daemon=True).start()

    def _watch_memory(self) -> None:
        while self.proc is not None and self.proc.poll() is None:
            if tree_rss_bytes(self._all_pids()) > self.limits.memory_bytes:
                self.result.oom_killed = True
                self.kill()
                return
            time.sleep(0.25)

    def _rank_pids(self) -> list[int]:
        try:
            pids = json.loads((self.root / "run" / "pids.json").read_text())
        except (OSError, ValueError):
            return []
        return [int(p) for p in pids.get("ranks", {}).values()]

    def _all_pids(self) -> list[int]:
        return ([self.proc.pid] if self.proc else []) + self._rank_pids()

    def lines(self) -> Iterator[str]:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            yield raw.decode("utf-8", errors="replace").rstrip("\n")

    def finish(self) -> ExecutionResult:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.wait()
        self.result.exit_code = code if code >= 0 else 128 - code
        self.result.duration = time.monotonic() - self._started_at
        self.result.killed = self._killed.is_set()
        buffer = tempfile.TemporaryFile()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.add(self.root / "out", arcname="out", recursive=True)  # links are stored as links, never followed
        buffer.seek(0)
        with buffer:
            self.result.artifacts, self.result.artifacts_skipped = read_artifacts_from_tar(
                buffer, self.limits, strip="out"
            )
        return self.result

    def kill(self) -> None:
        self._killed.set()
        for pid in self._rank_pids():
            _killpg(pid)
        if self.proc is not None:
            _killpg(self.proc.pid)

    def harness_tool(self, args: list[str], timeout: float) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "faultline_harness.diag", *args, "--run-dir", str(self.root / "run")],
            env=_harness_env(), capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        return (done.stdout + done.stderr).strip()

    def cleanup(self) -> None:
        # Always: ranks live in their own sessions and outlive a launcher the program killed.
        self.kill()
        if self.proc is not None:
            self.proc.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)


def _harness_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_THROUGH_ENV if k in os.environ}
    env["PYTHONPATH"] = str(HARNESS_DIR)
    return env


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

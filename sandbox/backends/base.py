"""What every sandbox backend offers the runner.

A sandbox is a context manager: entering it prepares (container created or
folders made), ``start`` launches the harness, ``lines`` yields its output
until it exits, and leaving it always removes everything, whatever happened.
"""

from __future__ import annotations

import json
import tarfile
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from django.conf import settings


class SandboxError(Exception):
    """The platform could not run the program (engine down, image missing, ...): never the candidate's fault."""


@dataclass(frozen=True)
class ProgramSpec:
    files: dict[str, str]
    entry: str = "main.py"
    ranks: int = 1
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ExecutionLimits:
    timeout_seconds: float = 60
    memory_bytes: int = 1024 * 1024 * 1024
    cpus: float = 1.0
    pids: int = 256
    work_bytes: int | None = None  # size of the writable /work tmpfs; None: see work_tmpfs_bytes
    tmp_bytes: int = 64 * 1024 * 1024
    file_size_bytes: int = 256 * 1024 * 1024
    open_files: int = 1024
    artifact_bytes: int = 64 * 1024 * 1024  # all artifacts of a run together
    artifact_file_bytes: int = 32 * 1024 * 1024
    gpu: bool = False
    gpu_index: int | None = None  # the GPU this run holds on its worker (one run per GPU)
    # The container's share of the CPU when the worker's cores are contended (Docker's cpu_shares; 1024 is
    # Docker's default). It never caps a run: `cpus` does. It decides who waits when runs compete.
    cpu_weight: int = 1024

    @property
    def work_tmpfs_bytes(self) -> int:
        """Files on the tmpfs count against the memory limit. A quarter of it (at most 512 MB) leaves the
        program its room, so a program that fills its folder meets "no space left", reported as a full
        output folder, rather than the OOM killer."""
        if self.work_bytes is not None:
            return self.work_bytes
        return min(512 * 1024 * 1024, self.memory_bytes // 4)


@dataclass
class Artifact:
    name: str
    content: bytes


@dataclass
class ExecutionResult:
    exit_code: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    killed: bool = False  # cancelled or past its deadline
    duration: float = 0.0
    artifacts: list[Artifact] = field(default_factory=list)
    artifacts_skipped: list[str] = field(default_factory=list)


class Sandbox(ABC):
    name = "abstract"
    isolated = False

    def __init__(self, program: ProgramSpec, limits: ExecutionLimits, labels: dict[str, str]) -> None:
        self.program = program
        self.limits = limits
        self.labels = labels
        self.result = ExecutionResult()

    def __enter__(self) -> Sandbox:
        self.prepare()
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()

    @abstractmethod
    def prepare(self) -> None: ...

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def lines(self) -> Iterator[str]:
        """Harness output lines until the program has exited (ends early if killed)."""

    @abstractmethod
    def finish(self) -> ExecutionResult:
        """After ``lines`` ends: collect exit status and artifacts, stop the program."""

    @abstractmethod
    def kill(self) -> None:
        """Stop everything now (deadline, cancel). Safe to call from another thread."""

    @abstractmethod
    def harness_tool(self, args: list[str], timeout: float) -> str:
        """Run ``python3 -m faultline_harness.diag ARGS --run-dir <the run folder>`` beside the program, as
        the program's user; its output."""

    def diagnose(self, kind: str, timeout: float = 20) -> str:
        """Run a harness diagnostic (stacks | memory) against the live program."""
        return self.harness_tool([kind], timeout)

    def control(self, settings: dict, timeout: float = 10) -> str:
        """Replace the run's pause settings (see faultline_harness/pausing.py)."""
        return self.harness_tool(["control", "--settings", json.dumps(settings)], timeout)

    @abstractmethod
    def cleanup(self) -> None: ...

    def make_run_folder(self) -> Path:
        """A fresh folder for this run under var/sandbox/, with the program written to ``program/``."""
        base = Path(settings.VAR_DIR) / "sandbox"
        base.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"run-{self.labels.get('faultline.run', 'x')}-", dir=base))
        program_dir = folder / "program"
        program_dir.mkdir()
        self.write_program(program_dir)
        return folder

    def write_program(self, program_dir: Path) -> None:
        """The program's files into an existing folder that the lab user can read."""
        for name, text in self.program.files.items():
            relative = safe_relative_path(name)
            if relative is None:
                raise SandboxError(f"program file name {name!r} leaves the program folder")
            path = program_dir / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        program_dir.chmod(0o755)

    def harness_command(self, root: str, program_dir: str | None = None) -> list[str]:
        return [
            "-m", "faultline_harness.launch",
            "--program-dir", program_dir or f"{root}/program", "--entry", self.program.entry,
            "--ranks", str(self.program.ranks), "--output-dir", f"{root}/out",
            "--work-dir", f"{root}/cwd", "--run-dir", f"{root}/run",
        ]  # fmt: skip


def safe_relative_path(name: str) -> str | None:
    """A program or artifact path that stays inside its folder, or None."""
    path = PurePosixPath(name)
    if path.is_absolute() or not path.parts or any(part in ("..", "") for part in path.parts):
        return None
    return str(path)


def read_artifacts_from_tar(stream: BinaryIO, limits: ExecutionLimits, strip: str):
    """Regular files only, never links or devices; sizes capped. Returns (artifacts, skipped notes).

    Read as a stream, one member at a time: files are kept in archive order while they fit the caps, and
    every file left out is named with the reason, so an oversized output folder costs the run only the
    files past the cap."""
    artifacts, skipped, total = [], [], 0
    with tarfile.open(fileobj=stream, mode="r|*") as tar:
        for member in tar:
            name = member.name.split("/", 1)[1] if member.name.startswith(strip + "/") else member.name
            if name in (".", ""):
                continue
            if member.isdir():
                continue
            if not member.isfile():
                skipped.append(f"{name}: not a regular file (links and devices are never copied)")
                continue
            relative = safe_relative_path(name)
            if relative is None:
                skipped.append(f"{name}: path leaves the output folder")
            elif member.size > limits.artifact_file_bytes:
                skipped.append(f"{relative}: {member.size} bytes is over the per-file cap")
            elif total + member.size > limits.artifact_bytes:
                skipped.append(f"{relative}: over the run's artifact cap")
            else:
                handle = tar.extractfile(member)
                artifacts.append(Artifact(relative, handle.read() if handle else b""))
                total += member.size
    return artifacts, skipped

"""Zygote mode of the launcher: torch imported once, ahead of the job; ranks made by ``os.fork``.

    python3 -m faultline_harness.launch --zygote CONTROL_DIR --program-dir DIR --output-dir OUT ...

The zygote imports torch (and numpy, torch.distributed) while nobody waits for it, prints one line,
``@@fl-zygote-ready``, then polls ``CONTROL_DIR/job.json`` (``{"entry": ..., "ranks": N, "env": {...}}``)
without starting a thread.
When the job arrives it runs exactly like a normal launch, except that each rank is a fork of this
already-warm process instead of a fresh interpreter. The child then rebuilds what a fresh
interpreter would have had: its own session, the rank's environment, unbuffered stdio on the
launcher's pipes, default signal handlers, the rank's ``sys.path``, and the rank runtime that
``sitecustomize`` installs in a cold rank.

Known differences from a cold rank, none of which a lab may rely on: the ranks share the zygote's
string-hash seed, and warnings that importing torch emits are not repeated in the rank.
"""

from __future__ import annotations

import atexit
import faulthandler
import gc
import importlib
import io
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from . import guard
from .protocol import READY_LINE  # noqa: F401 - the zygote's only line before the job (see protocol)

JOB_FILE = "job.json"
POLL_S = 0.005
# torch._dynamo is what the first optimizer a program creates imports (about 2 s, 70 MB): every lab pays it.
PRELOAD = ("numpy", "torch", "torch.distributed", "torch.optim", "torch._dynamo", "faultline_harness._rankside")
MAX_RANKS = 256

# The zygote's own search path minus what only the zygote had (its cwd and its PYTHONPATH): a rank's
# sys.path is rebuilt from its own PYTHONPATH in front of this, as a fresh interpreter would do.
_ZYGOTE_PYTHONPATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
_BASE_PATH = [p for p in sys.path[1:] if p not in _ZYGOTE_PYTHONPATH]


class JobError(ValueError):
    """job.json is unreadable or asks for something the launcher cannot do."""


def preload(modules: tuple[str, ...] | list[str] = PRELOAD) -> None:
    """Import what ranks usually need. Nothing may reach stdout or stderr before the job: both are the
    run's log. A module that fails to import is simply left for the rank to import (and fail on) itself."""
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - optional: the rank imports it again if it needs it
                pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)
    # Collect the imports' garbage once, then move every surviving object out of the collector's reach:
    # a rank's collections (and its exit) then scan only its own objects, not torch's whole module graph
    # (a quarter of a second each time), and do not copy the shared pages by touching their headers.
    gc.collect()
    gc.freeze()


def wait_for_job(control_dir: str | os.PathLike[str], poll_s: float = POLL_S) -> dict[str, Any]:
    """Block until the platform writes job.json (atomically, by rename), then return it validated.

    Polling on purpose: inotify would need ctypes and does not see every bind-mount setup, and a
    thread would make the later fork unsafe. One failed open every 5 ms costs next to nothing."""
    path = Path(control_dir) / JOB_FILE
    while True:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            time.sleep(poll_s)
            continue
        except OSError as exc:
            raise JobError(f"cannot read {path}: {exc}") from exc
        return parse_job(raw)


def parse_job(raw: bytes) -> dict[str, Any]:
    try:
        job = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise JobError(f"job.json is not JSON: {exc}") from None
    if not isinstance(job, dict):
        raise JobError("job.json must hold an object")
    entry = job.get("entry")
    if not isinstance(entry, str) or not _relative_inside(entry):
        raise JobError(f"job.json: entry must be a relative path inside the program folder, got {entry!r}")
    ranks = job.get("ranks", 1)
    if not isinstance(ranks, int) or isinstance(ranks, bool) or not 1 <= ranks <= MAX_RANKS:
        raise JobError(f"job.json: ranks must be between 1 and {MAX_RANKS}, got {ranks!r}")
    env = job.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise JobError("job.json: env must map names to strings")
    backend = job.get("dist_backend")
    if backend is not None and backend not in ("gloo", "nccl"):
        raise JobError(f"job.json: dist_backend must be gloo or nccl, got {backend!r}")
    return {"entry": entry, "ranks": ranks, "env": env, "dist_backend": backend}


def _relative_inside(name: str) -> bool:
    path = PurePosixPath(name)
    return bool(path.parts) and not path.is_absolute() and all(part not in ("", "..") for part in path.parts)


class ForkedRank:
    """The slice of ``subprocess.Popen`` the launcher uses, for a rank made by ``os.fork``."""

    def __init__(self, pid: int, stdout_fd: int, stderr_fd: int) -> None:
        self.pid = pid
        self.stdout = open(stdout_fd, "rb", buffering=0)  # closed by the launcher's reader
        self.stderr = open(stderr_fd, "rb", buffering=0)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                # Someone else collected it; Popen reports 0 in the same situation.
                self.returncode = 0
            else:
                if pid == self.pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"rank pid {self.pid} still running")
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode


def fork_ranks(
    program: Path, envs: list[dict[str, str]], work_dir: Path, in_child: Callable[[], None] | None
) -> list[ForkedRank]:
    """Fork one child per rank environment. Must run before the launcher starts any thread: a fork
    copies only the calling thread, so a lock held elsewhere would stay locked in the child forever.
    ``in_child`` runs first thing in each child (the parent-death signal)."""
    pipes = [(os.pipe(), os.pipe()) for _ in envs]
    # The launcher's own stdout and stderr: the platform's record of the run. No rank may keep a copy.
    trusted = {identity for identity in (guard.file_identity(1), guard.file_identity(2)) if identity}
    every_fd = [fd for pair in pipes for pipe in pair for fd in pipe]
    sys.stdout.flush()
    sys.stderr.flush()
    ranks: list[ForkedRank] = []
    for index, env in enumerate(envs):
        (out_r, out_w), (err_r, err_w) = pipes[index]
        pid = os.fork()
        if pid == 0:
            others = [fd for fd in every_fd if fd not in (out_w, err_w)]
            _become_rank(program, env, work_dir, out_w, err_w, others, in_child, trusted)
        ranks.append(ForkedRank(pid, out_r, err_r))
    for (_out_r, out_w), (_err_r, err_w) in pipes:
        os.close(out_w)
        os.close(err_w)
    return ranks


def _become_rank(
    program: Path,
    env: dict[str, str],
    work_dir: Path,
    out_w: int,
    err_w: int,
    other_fds: list[int],
    in_child: Callable[[], None] | None,
    trusted: set[tuple[int, int]],
) -> None:
    """The child side of the fork. Never returns: the launcher's frames above must not run twice."""
    code = 1
    try:
        os.setsid()
        if in_child is not None:
            in_child()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for fd in (*other_fds, out_w, err_w):
            os.close(fd)
        guard.close_descriptors_of(trusted)
        # The zygote is undumpable and a fork inherits that; the rank must be an ordinary process again
        # so the launcher can read its memory figures (the launcher stays out of the rank's reach).
        guard.set_dumpable(True)
        _default_signals()
        os.environ.clear()
        os.environ.update(env)
        os.chdir(work_dir)
        _fresh_stdio()
        sys.argv = [str(program)]
        sys.path[:] = _rank_sys_path(program, env)
        if env.get("PYTHONFAULTHANDLER"):
            faulthandler.enable(file=sys.stderr, all_threads=True)
        _apply_late_env(env)
        _install_rank_runtime()
        code = _run_program(program)
    except BaseException:  # noqa: BLE001 - a broken child must end here, whatever happened
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code)


def _default_signals() -> None:
    # The launcher's own handlers (stop forwarding) are inherited by the fork; a fresh interpreter has
    # the defaults, with SIGINT raising KeyboardInterrupt.
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _fresh_stdio() -> None:
    """Unbuffered text streams on the new fds 1 and 2, as PYTHONUNBUFFERED=1 gives a cold rank."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        old = getattr(sys, name)
        stream = io.TextIOWrapper(
            io.FileIO(fd, "w", closefd=False),
            encoding=getattr(old, "encoding", None) or "utf-8",
            errors=getattr(old, "errors", None) or ("backslashreplace" if fd == 2 else "strict"),
            newline="\n",
            line_buffering=False,
            write_through=True,
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _rank_sys_path(program: Path, env: dict[str, str]) -> list[str]:
    front = [str(program.parent)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return front + [p for p in _BASE_PATH if p not in front]


def _apply_late_env(env: dict[str, str]) -> None:
    """Settings a cold rank's imports read from the environment, re-read now that the env is the rank's."""
    torch = sys.modules.get("torch")
    threads = env.get("OMP_NUM_THREADS", "")
    if torch is not None and threads.isdigit() and int(threads) > 0:
        # OpenMP read OMP_NUM_THREADS when the zygote loaded it, before the launcher chose a value.
        _guarded(lambda: torch.set_num_threads(int(threads)))
    dist = sys.modules.get("torch.distributed")
    if dist is not None and hasattr(dist, "set_debug_level_from_env"):
        # torch.distributed reads TORCH_DISTRIBUTED_DEBUG at import time.
        _guarded(dist.set_debug_level_from_env)
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None and hasattr(numpy_random, "seed"):
        # numpy's global generator was seeded in the zygote; every rank would otherwise draw the same
        # numbers. (Python's random module reseeds itself after fork.)
        _guarded(numpy_random.seed)


def _guarded(func: Callable[[], object]) -> None:
    try:
        func()
    except Exception as exc:  # noqa: BLE001 - same contract as the rank runtime: warn, carry on
        sys.stderr.write(f"faultline-harness: warning: zygote fix-up failed: {exc!r}\n")


def _install_rank_runtime() -> None:
    # What sitecustomize does at start-up in a cold rank, with the same warning on failure.
    try:
        from faultline_harness import _rankside

        _rankside.install()
    except Exception as exc:  # noqa: BLE001
        sys.stderr.write(f"faultline-harness: warning: rank runtime not installed: {exc!r}\n")


def _run_program(program: Path) -> int:
    """Run the entry as ``__main__`` and end the way the interpreter would: exit status from SystemExit,
    1 and a traceback for an exception, death by SIGINT for an uncaught KeyboardInterrupt.

    Not runpy.run_path: its temporary module is thrown away afterwards, so the module teardown below
    (which is what flushes a file the program left open in a global) would have nothing to clear."""
    import builtins
    import importlib.machinery
    import types

    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=str(program),
        __loader__=importlib.machinery.SourceFileLoader("__main__", str(program)),
        __builtins__=builtins,
    )
    sys.modules["__main__"] = main
    if "__mp_main__" in sys.modules:
        # multiprocessing makes this alias when it is imported; in the zygote it pointed at the launcher.
        sys.modules["__mp_main__"] = main
    interrupted = False
    try:
        with io.open_code(str(program)) as handle:
            source = handle.read()
        exec(compile(source, str(program), "exec", dont_inherit=True), main.__dict__)
        code = 0
    except SystemExit as exc:
        code = _system_exit_code(exc.code)
    except KeyboardInterrupt as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code, interrupted = 130, True
    except BaseException as exc:  # noqa: BLE001 - any exception ends the program like the interpreter does
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code = 1
    _finalize(main)
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _system_exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    try:
        sys.stderr.write(f"{value}\n")
    except Exception:  # noqa: BLE001
        pass
    return 1


def _finalize(main: Any) -> None:
    """Py_FinalizeEx's steps that a program can observe, in its order; the caller's os._exit then skips
    the rest (tearing torch down takes most of a second and nobody can see it)."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        try:
            shutdown()  # joins non-daemon threads, as a normal exit does
        except Exception:  # noqa: BLE001
            pass
    atexit._run_exitfuncs()
    _flush_std()
    try:
        # Module teardown: drops the program's globals, so files it left open are closed and flushed.
        main.__dict__.clear()
        gc.collect()
    except Exception:  # noqa: BLE001
        pass
    _flush_std()


def _flush_std() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass

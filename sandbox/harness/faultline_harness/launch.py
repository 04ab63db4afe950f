"""Start a lab program's ranks and turn everything they do into one line-oriented stdout stream.

    python3 -m faultline_harness.launch --program-dir DIR --entry main.py --ranks N --output-dir OUT
    python3 -m faultline_harness.launch --zygote CONTROL_DIR --program-dir DIR --output-dir OUT ...
    python3 -m faultline_harness.launch --fork-ranks --program-dir DIR --entry main.py --ranks N ...

Program output comes out as ``[r{rank}] line``; telemetry as ``@@fl {json}`` (see README.md next to
this package). The launcher deliberately imports nothing heavier than the standard library so it is
up within milliseconds; torch is only ever imported by the ranks themselves, except in zygote mode
(``_zygote.py``), where it is imported ahead of the job and the ranks are forked from it, and with
``--fork-ranks`` (every Docker container that does not come from the warm pool), which does the same
without waiting for a job: torch's pages are then the launcher's in both, and the memory a leak check
measures in the container (everything less the launcher's own) is the ranks' alone, warm or cold.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from . import _zygote, guard, procfs, rankkeys, recordstore, sealedrecords
from .cgroupmem import ContainerMemory
from .monitors import Monitors
from .protocol import (
    END,
    ENV_DIST_BACKEND,
    ENV_OUTPUT_DIR,
    ENV_OWNER_PID,
    ENV_RANK,
    ENV_RUN_DIR,
    ENV_WORLD_SIZE,
    LAUNCHER_KINDS,
    PREFIX_BYTES,
    PROGRESS_KINDS,
    RANK_EXIT,
    READY_LINE,
    START,
    encode,
    program_line,
)
from .socketservice import RankedService
from .streams import LINE_CAP, TRUNCATED_SUFFIX, Emitter, LineSplitter, split_utf8

FAILURE_GRACE_S = 5.0
KILL_GRACE_S = 2.0
POLL_S = 0.05
EXIT_POLL_S = 0.002
EXIT_POLL_WINDOW_S = 0.5
READ_CHUNK = 64 * 1024

PACKAGE_DIR = Path(__file__).resolve().parent
HARNESS_DIR = PACKAGE_DIR.parent
SITE_DIR = PACKAGE_DIR / "_site"

# Below this much free space the output folder counts as full: the run's last files did not fit.
OUTPUT_FULL_BYTES = 256 * 1024


def exit_code_of(returncode: int) -> int:
    """Shell convention: a death by signal N is reported as 128 + N."""
    return returncode if returncode >= 0 else 128 - returncode


@dataclass
class Rank:
    index: int
    proc: subprocess.Popen[bytes] | _zygote.ForkedRank
    started: float
    start_ticks: int | None
    last_progress: float
    readers: list[threading.Thread] = field(default_factory=list)
    exit_code: int | None = None
    duration: float | None = None
    peak_rss: int = 0
    open_streams: int = 2
    drained_at: float | None = None  # when its stdout and stderr both reached EOF

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.exit_code is None


class Launcher:
    def __init__(self, args: argparse.Namespace, emitter: Emitter, fork_ranks: bool = False) -> None:
        self.args = args
        self.emitter = emitter
        self.fork_ranks = fork_ranks  # zygote mode: ranks are forks of this (torch-loaded) process
        self.ranks: list[Rank] = []
        self.stop_signal: int | None = None
        self._wake = threading.Event()
        self._drain_lock = threading.Lock()
        container = ContainerMemory.find() if getattr(args, "container_memory", False) else None
        self.monitors = Monitors(emitter, lambda: self.ranks, args.sample_interval, args.heartbeat_interval, container)
        self._reaping = False
        self._write_failed = False
        self.master_port = 0
        self.output_dir = Path(args.output_dir).resolve()
        self.work_dir = Path()
        self.run_dir = Path()
        self.services: dict[str, recordstore.Service] = {}

    # ---- setup -------------------------------------------------------------------------------------

    def prepare(self) -> Path:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        (self.output_dir / "harness").mkdir(exist_ok=True)
        self.work_dir = _writable_dir(self.args.work_dir, self.output_dir.parent / "work", "faultline-work-")
        self.run_dir = _writable_dir(self.args.run_dir, self.output_dir.parent / "run", "faultline-run-")
        (self.run_dir / "diag").mkdir(exist_ok=True)
        try:
            # Bound now, served from start_services: no launcher thread may exist while the ranks are created.
            self.services = recordstore.start_services(os.environ, self.run_dir)
        except (recordstore.ServiceConfigError, OSError) as exc:
            raise SystemExit(f"faultline launch: {exc}") from None
        # A missing entry point is not checked here on purpose: the rank's own "can't open file" error
        # then arrives like any other failure, with start/rank_exit/end events the platform already handles.
        return Path(self.args.program_dir).resolve() / self.args.entry

    def install_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum
        self._wake.set()

    def rank_env(self, rank: int, port: int) -> dict[str, str]:
        env = dict(os.environ)
        env.pop(ENV_OWNER_PID, None)
        world = str(self.args.ranks)
        # Not the program's folder: PYTHONPATH comes before the standard library, so a candidate's json.py
        # there would replace json for the harness's own start-up imports. The entry script's folder is
        # first on sys.path anyway, after start-up, and multiprocessing hands sys.path to its children.
        path_parts = [str(SITE_DIR), str(HARNESS_DIR)]
        if env.get("PYTHONPATH"):
            path_parts.append(env["PYTHONPATH"])
        env.update(
            {
                "RANK": str(rank),
                "WORLD_SIZE": world,
                "LOCAL_RANK": str(rank),
                "LOCAL_WORLD_SIZE": world,
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
                ENV_RANK: str(rank),
                ENV_WORLD_SIZE: world,
                ENV_OUTPUT_DIR: str(self.output_dir),
                ENV_RUN_DIR: str(self.run_dir),
                ENV_DIST_BACKEND: self.args.dist_backend,
                "PYTHONUNBUFFERED": "1",
                "PYTHONFAULTHANDLER": "1",
                "PYTHONPATH": os.pathsep.join(path_parts),
                **recordstore.socket_env(self.services),
            }
        )
        if "OMP_NUM_THREADS" not in env and self.args.ranks > 1:
            # Like torchrun: N ranks each spinning up one OpenMP thread per core would thrash the CPU.
            env["OMP_NUM_THREADS"] = str(max(1, _cpu_count() // self.args.ranks))
        return env

    def spawn(self, program: Path) -> None:
        port = _free_port()
        preexec = guard.parent_death_hook()
        if self.fork_ranks:
            envs = [self.rank_env(index, port) for index in range(self.args.ranks)]
            forked = _zygote.fork_ranks(program, envs, self.work_dir, self._closing_services(preexec))
            started = [(proc, time.monotonic()) for proc in forked]
        else:
            started = []
            for index in range(self.args.ranks):
                proc = self._popen_rank(program, self.rank_env(index, port), preexec)
                started.append((proc, time.monotonic()))
        for index, (proc, now) in enumerate(started):
            stat = procfs.read_stat(proc.pid)
            self.ranks.append(
                Rank(
                    index=index,
                    proc=proc,
                    started=now,
                    start_ticks=stat.start_ticks if stat else None,
                    last_progress=now,
                )
            )
        self.master_port = port

    def _closing_services(self, hook: Callable[[], None] | None) -> Callable[[], None] | None:
        """A forked rank must not hold a service's listening socket (it could answer in the store's place)."""
        fds = [service.fileno() for service in self.services.values()]
        if not fds:
            return hook

        def in_child() -> None:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            if hook is not None:
                hook()

        return in_child

    def start_services(self) -> None:
        for service in self.services.values():
            if isinstance(service, RankedService):
                service.set_ranks({rank.pid: (rank.index, rank.start_ticks) for rank in self.ranks})
            service.start()

    def _popen_rank(
        self, program: Path, env: dict[str, str], preexec: Callable[[], None] | None
    ) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, str(program)],
            cwd=self.work_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            # preexec_fn is only safe without threads: ranks are spawned before any launcher thread.
            preexec_fn=preexec,
        )

    def write_pids(self, ended: bool = False) -> None:
        payload = {
            "launcher": os.getpid(),
            "ranks": {str(r.index): r.pid for r in self.ranks},
            # Lets diag tell a live rank from an unrelated process that later reused the pid.
            "start_ticks": {str(r.index): r.start_ticks for r in self.ranks},
            "ended": ended,
        }
        self._write_json(self.run_dir / "pids.json", payload)

    # ---- output ------------------------------------------------------------------------------------

    def start_readers(self) -> None:
        for rank in self.ranks:
            for stream, is_stdout in ((rank.proc.stdout, True), (rank.proc.stderr, False)):
                assert stream is not None
                thread = threading.Thread(
                    target=self._pump,
                    args=(rank, stream, is_stdout),
                    name=f"fl-r{rank.index}-{'out' if is_stdout else 'err'}",
                    daemon=True,
                )
                thread.start()
                rank.readers.append(thread)

    def _pump(self, rank: Rank, stream: BinaryIO, is_stdout: bool) -> None:
        splitter = LineSplitter(lambda raw, cut: self._handle_line(rank, raw, cut, is_stdout), is_stdout)
        fd = stream.fileno()
        try:
            while True:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                splitter.feed(chunk)
            splitter.close()
        finally:
            stream.close()
            with self._drain_lock:
                rank.open_streams -= 1
                if rank.open_streams == 0:
                    rank.drained_at = time.monotonic()  # both pipes at EOF: the rank is probably exiting
                    self._wake.set()

    def _handle_line(self, rank: Rank, raw: bytes, cut: bool, is_stdout: bool) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if is_stdout and not cut and raw.startswith(PREFIX_BYTES) and self._forward_telemetry(rank, raw):
            return
        if cut or len(raw) > LINE_CAP:
            text = split_utf8(raw, LINE_CAP).decode("utf-8", errors="replace") + TRUNCATED_SUFFIX
        else:
            text = raw.decode("utf-8", errors="replace")
        self.emitter.write_line(program_line(rank.index, text))

    def _forward_telemetry(self, rank: Rank, raw: bytes) -> bool:
        try:
            event = json.loads(raw[len(PREFIX_BYTES) :].decode("utf-8", errors="replace"))
        except ValueError:
            return False
        if not isinstance(event, dict):
            return False
        kind = event.get("kind")
        if not isinstance(kind, str) or not kind or kind in LAUNCHER_KINDS:
            return False
        if kind in PROGRESS_KINDS:
            rank.last_progress = time.monotonic()
        fields = {k: v for k, v in event.items() if k not in ("kind", "t", "rank")}
        self.emitter.event(kind, rank=rank.index, **fields)
        return True

    def start_monitors(self) -> None:
        self.monitors.start()

    # ---- supervision -------------------------------------------------------------------------------

    def supervise(self) -> int:
        first_failure: int | None = None
        failed_at: float | None = None
        term_sent_at: float | None = None
        kill_sent = False
        while True:
            for rank in self.ranks:
                if rank.running:
                    returncode = rank.proc.poll()
                    if returncode is not None:
                        code = self._on_rank_exit(rank, returncode)
                        if code != 0 and first_failure is None and self.stop_signal is None:
                            first_failure, failed_at = code, time.monotonic()
            self._reap_orphans()
            live = [r for r in self.ranks if r.running]
            if not live:
                break
            now = time.monotonic()
            if term_sent_at is None:
                grace_over = failed_at is not None and now - failed_at >= FAILURE_GRACE_S
                if self.stop_signal is not None or grace_over:
                    self._signal_groups(live, signal.SIGTERM)
                    term_sent_at = now
            elif not kill_sent and now - term_sent_at >= KILL_GRACE_S:
                self._signal_groups(live, signal.SIGKILL)
                kill_sent = True
            # A rank whose pipes just closed is usually exiting: look again soon rather than in POLL_S (only
            # briefly: a rank may close its own stdout and stderr and run on).
            draining = any(r.drained_at is not None and now - r.drained_at < EXIT_POLL_WINDOW_S for r in live)
            self._wake.wait(EXIT_POLL_S if draining else POLL_S)
            self._wake.clear()
        if self.stop_signal is not None:
            return 143
        return first_failure or 0

    def _on_rank_exit(self, rank: Rank, returncode: int) -> int:
        code = exit_code_of(returncode)
        rank.duration = round(time.monotonic() - rank.started, 3)
        rank.exit_code = code
        # Give the readers a moment to drain so the rank's last words come before its rank_exit line.
        deadline = time.monotonic() + 0.5
        for reader in rank.readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        self.emitter.event(RANK_EXIT, rank=rank.index, exit_code=code, duration=rank.duration)
        return code

    def _signal_groups(self, ranks: list[Rank], signum: int) -> None:
        for rank in ranks:
            try:
                os.killpg(rank.pid, signum)
            except ProcessLookupError:
                # The group is empty; the rank itself may still be a zombie waiting to be polled.
                try:
                    os.kill(rank.pid, signum)
                except (ProcessLookupError, PermissionError):
                    pass
            except PermissionError:
                pass

    def enable_reaping(self) -> None:
        # As a child subreaper, orphaned grandchildren land on the launcher instead of init, so the
        # final sweep can still find and kill them; inside a container the launcher may be PID 1 anyway.
        self._reaping = os.getpid() == 1 or guard.prctl(guard.PR_SET_CHILD_SUBREAPER, 1)

    def _reap_orphans(self) -> None:
        if not self._reaping:
            return
        rank_pids = {r.pid for r in self.ranks if r.proc.returncode is None}
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid in rank_pids:
                return  # a rank's status belongs to its Popen object; poll() collects it next pass
            try:
                os.waitpid(info.si_pid, os.WNOHANG)
            except ChildProcessError:
                pass

    def leftovers(self) -> list[int]:
        stats = procfs.all_stats()
        me = os.getpid()
        found: set[int] = set()
        for rank in self.ranks:
            found.update(
                s.pid for s in stats.values() if (s.session == rank.pid or s.pgrp == rank.pid) and procfs.is_alive(s)
            )
        if self._reaping:
            found.update(procfs.process_tree(me, stats))
        found.discard(me)
        return sorted(found)

    def sweep(self) -> None:
        """Kill whatever the ranks left behind (background children, daemonised helpers)."""
        pids = self.leftovers()
        if not pids:
            return
        _kill_all(pids, signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE_S
        while pids and time.monotonic() < deadline:
            time.sleep(POLL_S)
            self._reap_orphans()
            pids = self.leftovers()
        if pids:
            _kill_all(pids, signal.SIGKILL)
            time.sleep(POLL_S)
            self._reap_orphans()

    def finish(self, exit_code: int) -> None:
        self.sweep()
        self.monitors.stop()
        deadline = time.monotonic() + 2.0
        for rank in self.ranks:
            for reader in rank.readers:
                reader.join(max(0.0, deadline - time.monotonic()))
        duration = round(time.monotonic() - self.emitter.t0, 3)
        end = {
            "kind": END,
            "t": self.emitter.now(),
            "exit_codes": {str(r.index): r.exit_code for r in self.ranks},
            "duration": duration,
            "peak_rss_bytes": {str(r.index): r.peak_rss for r in self.ranks},
            "exit_code": exit_code,
        }
        if self.monitors.container is not None:
            end["peak_container_bytes"] = self.monitors.container_peak
        if self.services:
            for service in self.services.values():
                if isinstance(service, sealedrecords.SealedRecords | rankkeys.RankKeys):
                    # After the sweep no process of the job is left to race these writes.
                    service.restore(self.output_dir)
            # Counted by the launcher's own threads: a rank can only add to them by paying for each read.
            end["services"] = {name: service.stop() for name, service in self.services.items()}
        summary = dict(end)
        summary["durations"] = {str(r.index): r.duration for r in self.ranks}
        if self.stop_signal is not None:
            summary["stopped_by_signal"] = self.stop_signal
        # Files first, then the "end" line: a consumer may treat that line as "the output folder is complete"
        # and copy it out at once, without waiting for this process to exit. A full output folder must not
        # cost the run its end line: the summary is a convenience copy, the line is the record.
        self._write_json(self.output_dir / "harness" / "summary.json", summary)
        self.write_pids(ended=True)
        end["output_full"] = self._write_failed or _nearly_full(self.output_dir)
        self.emitter.write_line(encode(end))
        self.emitter.close()

    def linger(self, seconds: float) -> None:
        """Stay up (reaping, as the container's init) so the platform can copy the output folder."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._reap_orphans()
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def _write_json(self, path: Path, payload: dict[str, Any]) -> None:
        try:
            _write_json(path, payload)
        except OSError:
            self._write_failed = True


# ---- helpers ---------------------------------------------------------------------------------------


def _nearly_full(path: Path) -> bool:
    try:
        stat = os.statvfs(path)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < OUTPUT_FULL_BYTES


def _writable_dir(explicit: str | None, default: Path, prefix: str) -> Path:
    if explicit:
        path = Path(explicit).resolve()
        path.mkdir(parents=True, exist_ok=True)
        return path
    try:
        default.mkdir(parents=True, exist_ok=True)
        if os.access(default, os.W_OK | os.X_OK):
            return default.resolve()
    except OSError:
        pass  # e.g. OUT's parent is read-only inside the container; a temp dir will do
    return Path(tempfile.mkdtemp(prefix=prefix))


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _kill_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m faultline_harness.launch", description=__doc__)
    parser.add_argument("--program-dir", required=True)
    parser.add_argument("--entry", help="required unless --zygote (the job names it)")
    parser.add_argument("--ranks", type=int, help="required unless --zygote (the job names it)")
    parser.add_argument("--zygote", metavar="CONTROL_DIR", help="preload torch, then wait for CONTROL_DIR/job.json")
    parser.add_argument(
        "--fork-ranks",
        action="store_true",
        help="preload torch in the launcher, then make each rank a fork of it, as a zygote does",
    )
    parser.add_argument(
        "--preload",
        metavar="MODULES",
        help=f"zygote or --fork-ranks: comma-separated modules to import (default {','.join(_zygote.PRELOAD)})",
    )
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--work-dir")
    parser.add_argument("--run-dir")
    parser.add_argument("--dist-backend", choices=("gloo", "nccl"), default="gloo")
    parser.add_argument("--sample-interval", type=float, default=0.5)
    parser.add_argument("--heartbeat-interval", type=float, default=1.0)
    parser.add_argument(
        "--container-memory",
        action="store_true",
        help="also sample the container's cgroup memory (only inside a container of the run's own)",
    )
    parser.add_argument(
        "--linger",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="after the end line, stay up this long (the output folder on tmpfs lives as long as the container)",
    )
    return parser


def check_args(args: argparse.Namespace) -> None:
    if not args.entry or args.ranks is None:
        raise SystemExit("faultline launch: --entry and --ranks are required (or --zygote)")
    if not 1 <= args.ranks <= 256:
        raise SystemExit("faultline launch: --ranks must be between 1 and 256")
    if args.sample_interval <= 0 or args.heartbeat_interval <= 0:
        raise SystemExit("faultline launch: intervals must be positive")


def run(args: argparse.Namespace, fork_ranks: bool = False) -> int:
    emitter = Emitter(sys.stdout.buffer)
    launcher = Launcher(args, emitter, fork_ranks=fork_ranks)
    program = launcher.prepare()
    launcher.install_signal_handlers()
    launcher.enable_reaping()
    launcher.spawn(program)
    launcher.start_services()
    launcher.write_pids()
    emitter.event(
        START,
        ranks=args.ranks,
        dist_backend=args.dist_backend,
        master_port=launcher.master_port,
        pids={str(r.index): r.pid for r in launcher.ranks},
    )
    launcher.start_readers()
    launcher.start_monitors()
    exit_code = launcher.supervise()
    launcher.finish(exit_code)
    if args.linger > 0:
        launcher.linger(args.linger)
    return exit_code


def preload(args: argparse.Namespace) -> None:
    _zygote.preload(_zygote.PRELOAD if args.preload is None else [m for m in args.preload.split(",") if m.strip()])


def serve_zygote(args: argparse.Namespace) -> int:
    """Preload, wait for the job, then run it like a normal launch with forked ranks."""
    preload(args)
    sys.stdout.write(READY_LINE + "\n")
    sys.stdout.flush()
    try:
        job = _zygote.wait_for_job(args.zygote)
    except _zygote.JobError as exc:
        sys.stderr.write(f"faultline launch: {exc}\n")
        return 2
    args.entry, args.ranks = job["entry"], job["ranks"]
    if job["dist_backend"]:
        args.dist_backend = job["dist_backend"]
    # The launcher passes its environment on to the ranks, so the job's toggles go there first.
    os.environ.update(job["env"])
    check_args(args)
    return run(args, fork_ranks=True)


def drop_working_dir_from_sys_path() -> None:
    """``python -m`` put the working directory first on sys.path, and the ranks can write there (the
    container's /work): a module this process imports once ranks exist must never come from their files."""
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)]


def main(argv: list[str] | None = None) -> int:
    # Before any rank exists: from here on no rank can open this process's descriptors (its stdout is the
    # platform's record of the run) or read its memory; see guard.py.
    guard.set_dumpable(False)
    drop_working_dir_from_sys_path()
    args = build_parser().parse_args(argv)
    if not (args.zygote or args.fork_ranks):
        check_args(args)
        return run(args)
    try:
        if args.zygote:
            code = serve_zygote(args)
        else:
            check_args(args)
            preload(args)
            code = run(args, fork_ranks=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
        if not isinstance(exc.code, int):
            sys.stderr.write(f"{exc.code}\n")
    # Interpreter shutdown with torch loaded takes most of a second and has nothing left to do.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())

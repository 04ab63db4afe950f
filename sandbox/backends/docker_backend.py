"""Hardened Docker backend.

Every container: no network, read-only root, size-capped tmpfs for /work and
/tmp, all capabilities dropped, no-new-privileges, non-root user, Docker's
default seccomp profile, an init process to reap zombies, pids / memory (no
swap) / CPU limits, file-size and open-file ulimits, capped json-file logs, the
run's own program folder mounted read-only and nothing else from the host.

The launcher is the container's PID 1 (no init, no shell) and makes itself
undumpable before any rank starts, so it is the only process that holds the
container's stdout: no rank can write a line in its name or signal it away
(see ``faultline_harness/guard.py``). The worker reads that stdout through an
attach stream opened before the container starts, so no line is lost to log
rotation. The output folder lives on tmpfs, which vanishes when the container
stops, so the launcher lingers after its ``end`` line: the worker copies
/work/out out as a tar stream while the container is still alive, then kills it.

A run either starts its own (cold) container, or takes a warm one from this
worker process's pool (``sandbox/backends/warm_pool.py``): created with the same settings,
already running the harness in zygote mode with torch imported, its program and
control folders bind-mounted read-only and still empty. The run writes its files
and then ``control/job.json``; the zygote starts the ranks. A warm container
serves one run and is removed afterwards like a cold one.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from sandbox.backends import warm_pool as pool
from sandbox.backends.base import (
    ExecutionResult,
    Sandbox,
    SandboxError,
    read_artifacts_from_tar,
)
from sandbox.backends.containerspec import (
    BASE_ENV,
    FORK_RANKS_MIN_BYTES,
    LAB_USER,
    PROGRAM,
    WORK,
    container_config,
    launcher_command,
)
from sandbox.harness.faultline_harness import protocol

REMOVE_ATTEMPTS = 4


def _end_exit_code(line: str) -> int | None:
    """The exit status in the launcher's ``end`` event, or None for any other line. Ranks cannot send
    an ``end`` (the launcher refuses their launcher-kind events and holds the only stdout)."""
    event = protocol.decode(line)
    if event is None or event["kind"] != protocol.END:
        return None
    code = event.get("exit_code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


class DockerSandbox(Sandbox):
    name = "docker"
    isolated = True

    def prepare(self) -> None:
        import docker
        from docker.errors import DockerException, ImageNotFound

        from sandbox.images.tags import image_tag
        from sandbox.selection import engine_unreachable

        try:
            self.client = docker.from_env(timeout=30)
            self.client.ping()
        except DockerException as exc:
            raise SandboxError(engine_unreachable(exc)) from exc
        self.image = image_tag("cpu")
        try:
            self.client.images.get(self.image)
        except ImageNotFound:
            raise SandboxError(
                f"lab image {self.image} is missing on this worker (run manage.py buildimages)"
            ) from None
        self.host_dir: Path | None = None
        self.container = None
        self.warm = False
        self.exit_code: int | None = None
        self._killed = threading.Event()
        self._started_at = 0.0
        self._start_epoch = 0
        self._pool = None
        self._stream = None

    def _container_config(self) -> dict:
        assert self.host_dir is not None
        env = dict(BASE_ENV)
        env.update({k: str(v) for k, v in self.program.env.items()})
        launch = self.harness_command(WORK, program_dir=PROGRAM)
        if self.limits.memory_bytes >= FORK_RANKS_MIN_BYTES:
            # Ranks are forks of a launcher that imported torch, as in a warm container: the memory a run is
            # graded on (the container's, less the launcher's own) then has the same shape cold or warm.
            launch.append("--fork-ranks")
        return container_config(
            self.image, self.limits, launcher_command(launch), env, self.labels, {self.host_dir / "program": PROGRAM}
        )

    def start(self) -> None:
        self._pool = pool.current()
        if self._pool is not None:
            self._pool.run_started(self.image, self.limits)
            while (lease := self._pool.take(self.image, self.limits)) is not None:
                if self._start_warm(lease):
                    return
        self._start_cold()

    def _start_cold(self) -> None:
        from docker.errors import DockerException

        self.host_dir = self.make_run_folder()
        try:
            self.container = self.client.containers.create(**self._container_config())
            self._attach()
            self._start_epoch = int(time.time()) - 1
            self._started_at = time.monotonic()
            self.container.start()
        except DockerException as exc:
            raise SandboxError(f"could not start the lab container: {exc}") from exc

    def _start_warm(self, lease) -> bool:
        """Hand the job to a pool container's zygote; False (lease thrown away) if the container died."""
        from docker.errors import DockerException

        try:
            # Through this sandbox's own client: the pool's belongs to its filler thread.
            container = self.client.containers.get(lease.container_id)
        except DockerException:
            container = None
        if container is None or container.status != "running":
            self._pool.discard(lease)
            return False
        if self.limits.cpu_weight != lease.profile.limits.cpu_weight:
            try:
                container.update(cpu_shares=self.limits.cpu_weight)
            except DockerException:
                self._pool.discard(lease)
                return False
        self.container, self.host_dir, self.warm = container, lease.slot, True
        try:
            self._attach()  # before the job exists: the zygote prints nothing until then
        except DockerException:
            self._pool.discard(lease)
            self.container, self.host_dir, self.warm = None, None, False
            return False
        self.write_program(lease.slot / "program")
        env = {k: str(v) for k, v in self.program.env.items()}
        job = {"entry": self.program.entry, "ranks": self.program.ranks, "env": env}
        control = lease.slot / "control"
        tmp = control / ".job.json.tmp"
        tmp.write_text(json.dumps(job))
        tmp.chmod(0o644)
        self._start_epoch = int(time.time()) - 1
        self._started_at = time.monotonic()
        # The zygote polls for this exact name; the rename makes the whole file appear at once.
        os.rename(tmp, control / "job.json")
        return True

    @property
    def container_id(self) -> str:
        return self.container.id if self.container is not None else ""

    def _attach(self) -> None:
        """The container's stdout as a live stream, opened before anything is printed. Unlike reading the
        json-file log, nothing is lost when a program prints faster than the log is rotated."""
        self._stream = self.container.attach(stdout=True, stderr=True, stream=True, logs=False)

    def lines(self) -> Iterator[str]:
        buffer = b""
        try:
            for chunk in self._stream:
                buffer += chunk
                while b"\n" in buffer:
                    raw, buffer = buffer.split(b"\n", 1)
                    line = raw.decode("utf-8", errors="replace")
                    yield line
                    end_code = _end_exit_code(line)
                    if end_code is not None:
                        # The launcher's last line, written after its files: the run is over and /work/out is
                        # complete; the launcher lingers so the worker can copy it.
                        self.exit_code = end_code
                        return
                if self._killed.is_set():
                    return
            if buffer:
                yield buffer.decode("utf-8", errors="replace")
        finally:
            self._close_stream()

    def _close_stream(self) -> None:
        """Hang up the attach connection as soon as the worker stops reading it. Left open, the engine keeps
        writing a chatty program's output into it, blocks once the socket is full, and holds up every later
        call on that container (inspect, kill, remove) until the connection is finally collected."""
        stream, self._stream = getattr(self, "_stream", None), None
        if stream is not None:
            try:
                stream.close()
            except Exception:  # noqa: BLE001 - already closed by the engine
                pass

    def finish(self) -> ExecutionResult:
        from docker.errors import DockerException

        self.result.duration = time.monotonic() - self._started_at
        self.result.killed = self._killed.is_set()
        if self.exit_code is not None:
            try:
                self.result.artifacts, self.result.artifacts_skipped = read_artifacts_from_tar(
                    self._output_tar(), self.limits, strip="."
                )
            except (DockerException, tarfile.TarError) as exc:
                self.result.artifacts_skipped.append(f"output folder could not be copied: {exc}")
        elif not self._killed.is_set():
            self.exit_code = self._launcher_status()
        self.result.exit_code = self.exit_code if self.exit_code is not None else 137
        self.result.oom_killed = self._oom_happened()
        if self.exit_code is None or self._killed.is_set():
            self.kill()
        # Otherwise only the lingering launcher is left: cleanup's forced removal stops it, after the runner
        # has recorded the result.
        return self.result

    def _launcher_status(self) -> int | None:
        """The container's exit status from the runtime, when the stream ended without an end line."""
        try:
            return int(self.container.wait(timeout=10).get("StatusCode", 1))
        except Exception:  # noqa: BLE001 - still running or gone: the runner treats it as lost
            return None

    def _output_tar(self) -> io.RawIOBase:
        """/work/out as a tar stream made inside the container, read as it arrives. Docker's archive API
        cannot read tmpfs mounts; tar stores links as links, and the worker's reader refuses them anyway.
        Name order makes "the first files within the cap" the same every time."""
        _exit, chunks = self.container.exec_run(
            ["/bin/tar", "--sort=name", "-C", f"{WORK}/out", "-cf", "-", "."], user=LAB_USER, stream=True, demux=True
        )
        return ChunkReader(stdout for stdout, _stderr in chunks if stdout)

    def _oom_happened(self) -> bool:
        """Docker reports an 'oom' event whenever the kernel OOM-killed any process in the container."""
        try:
            self.container.reload()
            if self.container.attrs["State"].get("OOMKilled"):
                return True
            # "until" in the past (to the nanosecond): a whole-second bound in the future makes the
            # engine hold the stream open until that second, which cost every run up to a second.
            events = self.client.events(
                since=self._start_epoch, until=f"{time.time():.9f}", decode=True,
                filters={"container": self.container.id, "event": "oom"},
            )  # fmt: skip
            return any(True for _ in events)
        except Exception:  # noqa: BLE001 - a lost event stream must not fail the run
            return False

    def kill(self) -> None:
        self._killed.set()
        if self.container is not None:
            try:
                self.container.kill()
            except Exception:  # noqa: BLE001 - already stopped or gone
                pass

    def harness_tool(self, args: list[str], timeout: float) -> str:
        from docker.errors import DockerException

        try:
            command = ["timeout", str(int(timeout)), "python3", "-m", "faultline_harness.diag", *args]
            result = self.container.exec_run(
                [*command, "--run-dir", f"{WORK}/run"],
                user=LAB_USER,
                environment={"PYTHONPATH": "/opt/faultline/harness"},
                # `python -m` puts its working directory first on sys.path: "/" (read-only), not the
                # container's /work, where the ranks could leave a faultline_harness/ of their own.
                workdir="/",
            )
        except DockerException as exc:
            return f"harness tool could not run: {exc}"
        return result.output.decode("utf-8", errors="replace").strip()

    def _remove_container(self) -> None:
        """Remove the run's container, trying again a few times: on a loaded engine a removal can be refused
        while the kill is still in progress, and a container left behind holds memory and a name until the
        reaper's next pass."""
        from docker.errors import NotFound

        for attempt in range(REMOVE_ATTEMPTS):
            try:
                self.container.remove(force=True)
                return
            except NotFound:
                return
            except Exception:  # noqa: BLE001 - the reaper removes anything left behind
                if attempt + 1 < REMOVE_ATTEMPTS:
                    time.sleep(0.5 * (attempt + 1))

    def cleanup(self) -> None:
        self._close_stream()
        if getattr(self, "container", None) is not None:
            self._remove_container()
        if getattr(self, "host_dir", None) is not None:
            shutil.rmtree(self.host_dir, ignore_errors=True)
        if getattr(self, "_pool", None) is not None:
            self._pool.run_ended()  # the pool refills now that no program competes for the cores


class ChunkReader(io.RawIOBase):
    """A read-only file over an iterator of byte chunks, so tarfile can stream the exec output without
    the whole archive ever being held in memory."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

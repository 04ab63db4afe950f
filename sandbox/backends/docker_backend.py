"""Hardened Docker backend.

Every container: no network, read-only root, size-capped tmpfs for /work and
/tmp, all capabilities dropped, no-new-privileges, non-root user, Docker's
default seccomp profile, an init process to reap zombies, pids / memory (no
swap) / CPU limits, file-size and open-file ulimits, capped json-file logs, the
run's own program folder mounted read-only and nothing else from the host.

The output folder lives on tmpfs, which vanishes when the container stops, so
the harness runs under a small shell that prints an exit marker and then idles:
the worker copies /work/out out as a tar stream while the container is still
alive, then kills it.

A run either starts its own (cold) container, or takes a warm one from this
worker process's pool (``sandbox/pool.py``): created with the same settings,
already running the harness in zygote mode with torch imported, its program and
control folders bind-mounted read-only and still empty. The run writes its files
and then ``control/job.json``; the zygote starts the ranks. A warm container
serves one run and is removed afterwards like a cold one.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from sandbox.backends.base import (
    HARNESS_EXIT_MARKER,
    ExecutionLimits,
    ExecutionResult,
    Sandbox,
    SandboxError,
    read_artifacts_from_tar,
)
from sandbox.harness.faultline_harness._zygote import READY_LINE as ZYGOTE_READY

WORK = "/work"


class OutputTooLarge(Exception):
    pass


PROGRAM = "/lab/program"
CONTROL = "/lab/control"  # warm containers only: where job.json appears
LAB_USER = "10001:10001"
END_PREFIX = '@@fl {"kind":"end",'  # how faultline_harness.launch writes its last line
# No network means no resolvable hostname: pin gloo to loopback instead of letting it warn.
BASE_ENV = {"PYTHONUNBUFFERED": "1", "HOME": WORK, "GLOO_SOCKET_IFNAME": "lo"}
ZYGOTE_ARGS = (
    "-m", "faultline_harness.launch", "--zygote", CONTROL, "--program-dir", PROGRAM,
    "--output-dir", f"{WORK}/out", "--work-dir", f"{WORK}/cwd", "--run-dir", f"{WORK}/run",
)  # fmt: skip


def harness_script(launch_args: list[str] | tuple[str, ...]) -> list[str]:
    """The container's command: the harness, then the exit marker, then idle until the worker has copied
    the output folder out."""
    script = (
        f"mkdir -p {WORK}/out {WORK}/cwd {WORK}/run && cd {WORK}/cwd && "
        f'python3 {" ".join(launch_args)}; echo "{HARNESS_EXIT_MARKER}$?"; exec sleep 120'
    )
    return ["sh", "-c", script]


def container_config(
    image: str,
    limits: ExecutionLimits,
    command: list[str],
    env: dict[str, str],
    labels: dict[str, str],
    mounts: dict[Path, str],
) -> dict:
    """Everything docker needs to create a lab container. Cold and warm containers both come from here,
    so a warm one can never be less locked down than a cold one. ``mounts``: host folder → read-only path."""
    from docker.types import DeviceRequest, LogConfig, Ulimit

    config = {
        "image": image,
        "command": command,
        "user": LAB_USER,
        "working_dir": WORK,
        "environment": env,
        "labels": labels,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {
            # Owned by the lab user: Docker keeps the image's root-owned mode for the workdir.
            WORK: f"rw,nosuid,nodev,size={limits.work_bytes},uid=10001,gid=10001,mode=0700",
            "/tmp": f"rw,nosuid,nodev,size={limits.tmp_bytes},mode=1777",
        },
        "volumes": {str(host): {"bind": inside, "mode": "ro"} for host, inside in mounts.items()},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "init": True,
        "pids_limit": limits.pids,
        "mem_limit": limits.memory_bytes,
        "memswap_limit": limits.memory_bytes,  # equal to the memory limit: no swap
        "nano_cpus": int(limits.cpus * 1e9),
        "shm_size": 256 * 1024 * 1024,  # DataLoader workers pass batches through /dev/shm
        "ulimits": [
            Ulimit(name="fsize", soft=limits.file_size_bytes, hard=limits.file_size_bytes),
            Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
            Ulimit(name="core", soft=0, hard=0),
        ],
        "log_config": LogConfig(type="json-file", config={"max-size": "16m", "max-file": "1"}),
        "detach": True,
    }
    if limits.gpu:
        # Exactly the GPU this run claimed, so two runs never share one.
        if limits.gpu_index is not None:
            request = DeviceRequest(device_ids=[str(limits.gpu_index)], capabilities=[["gpu"]])
        else:
            request = DeviceRequest(count=1, capabilities=[["gpu"]])
        config["device_requests"] = [request]
    return config


def _end_exit_code(line: str) -> int | None:
    """The exit status in the launcher's ``end`` event, or None for any other line. Ranks cannot send
    an ``end`` (the launcher refuses their launcher-kind events), so only the launcher writes one."""
    if not line.startswith(END_PREFIX):
        return None
    try:
        code = json.loads(line[len("@@fl ") :]).get("exit_code")
    except ValueError:
        return None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


class DockerSandbox(Sandbox):
    name = "docker"
    isolated = True

    def prepare(self) -> None:
        import docker
        from docker.errors import DockerException, ImageNotFound

        from sandbox.images.build import image_tag
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

    def _container_config(self) -> dict:
        assert self.host_dir is not None
        env = dict(BASE_ENV)
        env.update({k: str(v) for k, v in self.program.env.items()})
        launch = self.harness_command(WORK, program_dir=PROGRAM)
        return container_config(
            self.image, self.limits, harness_script(launch), env, self.labels, {self.host_dir / "program": PROGRAM}
        )

    def start(self) -> None:
        from sandbox import pool

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
        self.container, self.host_dir, self.warm = container, lease.slot, True
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

    def lines(self) -> Iterator[str]:
        buffer = b""
        expect_ready = self.warm  # a warm container's log starts with the zygote's ready line
        for chunk in self.container.logs(stream=True, follow=True):
            buffer += chunk
            while b"\n" in buffer:
                raw, buffer = buffer.split(b"\n", 1)
                line = raw.decode("utf-8", errors="replace")
                if expect_ready:
                    expect_ready = False
                    if line == ZYGOTE_READY:
                        continue
                if line.startswith(HARNESS_EXIT_MARKER):
                    self.exit_code = int(line[len(HARNESS_EXIT_MARKER) :].strip() or 1)
                    return
                yield line
                end_code = _end_exit_code(line)
                if end_code is not None:
                    # The launcher's last line, written after its files: the run is over and /work/out is
                    # complete. Not waiting for the process to exit and the shell's marker saves ~60 ms.
                    self.exit_code = end_code
                    return
            if self._killed.is_set():
                return
        if buffer:
            yield buffer.decode("utf-8", errors="replace")

    def finish(self) -> ExecutionResult:
        from docker.errors import DockerException

        self.result.duration = time.monotonic() - self._started_at
        self.result.killed = self._killed.is_set()
        if self.exit_code is not None:
            try:
                self.result.artifacts, self.result.artifacts_skipped = read_artifacts_from_tar(
                    self._output_tar(), self.limits, strip="."
                )
            except (DockerException, OutputTooLarge, tarfile.TarError) as exc:
                self.result.artifacts_skipped.append(f"output folder could not be copied: {exc}")
        self.result.exit_code = self.exit_code if self.exit_code is not None else 137
        self.result.oom_killed = self._oom_happened()
        if self.exit_code is None:
            self.kill()  # no exit marker: the harness may still be running
        # Otherwise only the idle shell (and whatever the sweep missed) is left: cleanup's forced removal
        # stops it, after the runner has recorded the result.
        return self.result

    def _output_tar(self) -> bytes:
        """/work/out as a tar stream made inside the container. Docker's archive API cannot read
        tmpfs mounts; tar stores links as links, and the worker's reader refuses them anyway."""
        cap = self.limits.artifact_bytes * 2 + 1024 * 1024  # room for tar headers and padding
        _exit, chunks = self.container.exec_run(
            ["/bin/tar", "-C", f"{WORK}/out", "-cf", "-", "."], user=LAB_USER, stream=True, demux=True
        )
        data = bytearray()
        for stdout, _stderr in chunks:
            if stdout:
                data.extend(stdout)
                if len(data) > cap:
                    raise OutputTooLarge(f"the output folder is larger than {cap} bytes")
        return bytes(data)

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

    def diagnose(self, kind: str, timeout: float = 20) -> str:
        from docker.errors import DockerException

        try:
            command = ["timeout", str(int(timeout)), "python3", "-m", "faultline_harness.diag", kind]
            result = self.container.exec_run(
                [*command, "--run-dir", f"{WORK}/run"],
                user=LAB_USER,
                environment={"PYTHONPATH": "/opt/faultline/harness"},
            )
        except DockerException as exc:
            return f"diagnostic could not run: {exc}"
        return result.output.decode("utf-8", errors="replace").strip()

    def cleanup(self) -> None:
        if getattr(self, "container", None) is not None:
            try:
                self.container.remove(force=True)
            except Exception:  # noqa: BLE001 - the reaper removes anything left behind
                pass
        if getattr(self, "host_dir", None) is not None:
            shutil.rmtree(self.host_dir, ignore_errors=True)
        if getattr(self, "_pool", None) is not None:
            self._pool.run_ended()  # the pool refills now that no program competes for the cores

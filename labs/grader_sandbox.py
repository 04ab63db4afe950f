"""Run a lab's grader in its own hardened container.

The grader loads files the candidate's program wrote, so it gets the same lock-down as a
lab run (``sandbox.backends.containerspec.container_config``: no network, read-only root,
all capabilities dropped, no-new-privileges, uid 10001, pids/memory/CPU limits, tmpfs
scratch) from the lab image, with two read-only mounts and nothing else from the host:

- ``/opt/grader``: a copy of ``labs/grader_api.py`` and ``labs/grader_main.py``, the only
  project code the grader may import;
- ``/grade``: ``request.json`` (the lab's grader source, parameters, seeds) and
  ``artifacts/`` (the run's output files).

The time limit is enforced from outside: the worker kills the container.

A worker process keeps one grader container on standby (``start_standby``, from the worker's start-up):
started, torch imported, waiting for its request. A grading hands it the inputs instead of starting a
container, which takes the container's start and the import off the time a candidate waits for the
result. It is used once and removed like any other; the next one starts after the grading, at the
pool's low CPU weight. It is labelled as a warm-pool container, so the reaper removes it with its worker.

Where no Docker engine answers (a development machine on the process backend) the grader runs as a plain
subprocess instead, with a warning in the log: that machine isolates nothing anyway. A run
that was itself sandboxed in Docker is never graded outside a container.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from core.errortext import first_line
from sandbox.backends.base import ExecutionLimits, safe_relative_path
from sandbox.backends.containerspec import container_config
from sandbox.backends.warm_pool import POOL_CPU_WEIGHT, POOL_LABEL
from sandbox.images.tags import image_tag
from sandbox.instance import INSTANCE_LABEL, instance_id

log = logging.getLogger(__name__)

GRADER_TIMEOUT_SECONDS = 120
GRADER_MIN_MEMORY_BYTES = 2 * 1024**3
PACKAGE_FILES = ("grader_api.py", "grader_main.py")
PACKAGE_MOUNT = "/opt/grader"
INPUT_MOUNT = "/grade"
GRADER_LABEL = "faultline.grader"
STANDBY_IDLE_SECONDS = 600


class GraderFault(RuntimeError):
    """The lab's grader crashed, timed out or could not start: the platform's fault."""


@dataclass
class GraderJob:
    source: str
    filename: str
    params: dict
    seed: int
    probe_seed: int
    ranks: int
    artifacts: dict[str, bytes] = field(default_factory=dict)
    memory_bytes: int = GRADER_MIN_MEMORY_BYTES
    cpus: float = 1.0
    cpu_weight: int = 1024  # the graded run's (sandbox.models.Run.cpu_weight)
    timeout_seconds: float = GRADER_TIMEOUT_SECONDS


@dataclass
class GraderAnswer:
    metrics: dict[str, float]
    candidate_error: str = ""  # why the run's output could not be measured, for the candidate


def grader_image() -> str:
    """The lab image the grader runs in (the CPU build: graders never need a GPU)."""
    return image_tag("cpu")


def grader_limits(job: GraderJob) -> ExecutionLimits:
    return ExecutionLimits(
        timeout_seconds=job.timeout_seconds, memory_bytes=job.memory_bytes, cpus=job.cpus, cpu_weight=job.cpu_weight,
        pids=128, work_bytes=256 * 1024**2, tmp_bytes=64 * 1024**2, file_size_bytes=256 * 1024**2, open_files=512,
    )  # fmt: skip


def run_grader(
    job: GraderJob,
    labels: dict[str, str],
    *,
    require_container: bool,
    on_start: Callable[[], None] | None = None,
    on_running: Callable[[], None] | None = None,
) -> GraderAnswer:
    """``require_container``: the run was sandboxed, so its grader must be too (no subprocess fallback).

    ``on_start`` and ``on_running`` (progress for the candidate's page) are called as the grader's container is
    being prepared and once the grader itself runs."""
    if on_start:
        on_start()
    engine, unavailable = grader_engine()
    if engine is None and require_container:
        raise GraderFault(f"{unavailable}, and the grader of a sandboxed run must run in a container")
    base = Path(settings.VAR_DIR) / "grading"
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="grade-", dir=base))
    try:
        package, inputs = work / "package", work / "input"
        if engine is not None:
            taken = _take_standby(engine, job)
            if taken is not None:
                standby, container = taken
                try:
                    return _on_standby(container, job, standby, on_running)
                finally:
                    shutil.rmtree(standby.work, ignore_errors=True)
                    _refill_standby()
            write_package(package)
            write_inputs(inputs, job, f"{INPUT_MOUNT}/artifacts")
            return _in_container(engine, job, package, inputs, labels, on_running)
        write_package(package)
        log.warning(
            "%s: the grader of %s runs as a plain subprocess on this machine, NOT sandboxed "
            "(acceptable only where lab runs are not isolated either)",
            unavailable, job.filename,
        )  # fmt: skip
        write_inputs(inputs, job, str(inputs / "artifacts"))
        if on_running:
            on_running()
        return _in_subprocess(job, package, inputs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if engine is not None:
            engine.close()


def write_package(folder: Path) -> None:
    """The grader's whole view of the project: the two files of the ``labs`` package it imports."""
    target = folder / "labs"
    target.mkdir(parents=True)
    here = Path(__file__).resolve().parent
    for name in PACKAGE_FILES:
        shutil.copyfile(here / name, target / name)
    _readable(folder)


def write_inputs(folder: Path, job: GraderJob, artifacts_path: str) -> None:
    """``artifacts_path``: where the grader will see ``folder/artifacts``."""
    artifacts = folder / "artifacts"
    artifacts.mkdir(parents=True)
    for name, content in job.artifacts.items():
        relative = safe_relative_path(name)
        if relative is None:
            continue  # the sandbox never stores such a name; never write outside the folder if one appears
        target = artifacts / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bytes(content))
    request = {
        "source": job.source, "filename": job.filename, "params": job.params, "seed": job.seed,
        "probe_seed": job.probe_seed, "ranks": job.ranks,
        "artifacts": artifacts_path,
    }  # fmt: skip
    # Renamed into place once whole: a standby grader starts reading the moment the name appears.
    staged = folder / ".request.json.tmp"
    staged.write_text(json.dumps(request), encoding="utf-8")
    _readable(folder)
    staged.rename(folder / "request.json")


def _readable(folder: Path) -> None:
    """The container's user (10001) reads the mounts; nothing in them is writable by it."""
    folder.chmod(0o755)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def grader_engine() -> tuple[object | None, str]:
    """(a Docker client that has the lab image, "") or (None, why not)."""
    try:
        import docker
        from docker.errors import ImageNotFound

        client = docker.from_env(timeout=30)
        client.ping()
    except Exception:  # noqa: BLE001 - any transport failure means "no engine here"
        return None, "no Docker engine answers"
    image = grader_image()
    try:
        client.images.get(image)
    except ImageNotFound:
        return None, f"the lab image {image} is missing (run manage.py buildimages)"
    except Exception as exc:  # noqa: BLE001
        return None, f"the Docker engine could not be asked for {image}: {first_line(exc)}"
    return client, ""


def _in_container(
    client,
    job: GraderJob,
    package: Path,
    inputs: Path,
    labels: dict[str, str],
    on_running: Callable[[], None] | None = None,
) -> GraderAnswer:
    from docker.errors import DockerException

    limits = grader_limits(job)
    command = ["python3", "-P", "-m", "labs.grader_main", f"{INPUT_MOUNT}/request.json"]
    config = _grader_config(limits, command, labels, package, inputs)
    try:
        container = client.containers.create(**config)
    except DockerException as exc:
        raise GraderFault(f"the grader's container could not be created: {first_line(exc)}") from exc
    return _collect(container, job, limits, start=True, on_running=on_running)


def _grader_config(limits: ExecutionLimits, command: list[str], labels: dict, package: Path, inputs: Path) -> dict:
    env = {
        "PYTHONPATH": PACKAGE_MOUNT, "HOME": "/work", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
    }  # fmt: skip
    mounts = {package: PACKAGE_MOUNT, inputs: INPUT_MOUNT}
    return container_config(grader_image(), limits, command, env, {**labels, GRADER_LABEL: "1"}, mounts)


def _collect(container, job: GraderJob, limits: ExecutionLimits, *, start: bool, on_running) -> GraderAnswer:
    """Start the container (unless it is a standby, already running), wait for its answer within the time
    limit, and remove it whatever happens."""
    from docker.errors import DockerException
    from requests.exceptions import ConnectionError as RequestsConnectionError
    from requests.exceptions import ReadTimeout

    try:
        if start:
            container.start()
        if on_running:
            on_running()
        try:
            status = container.wait(timeout=limits.timeout_seconds).get("StatusCode")
            timed_out = False
        except (ReadTimeout, RequestsConnectionError):
            timed_out, status = True, None
            container.kill()
        stdout = container.logs(stdout=True, stderr=False).decode("utf-8", errors="replace")
        stderr = container.logs(stdout=False, stderr=True).decode("utf-8", errors="replace")
        container.reload()
        oom = bool(container.attrs["State"].get("OOMKilled"))
    except DockerException as exc:
        raise GraderFault(f"the grader's container failed: {first_line(exc)}") from exc
    finally:
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001 - the reaper removes what is left (it carries the run's labels)
            log.warning("could not remove grader container %s", container.short_id)
    if timed_out:
        raise GraderFault(f"the grader of {job.filename} ran over {limits.timeout_seconds:g} s")
    # Only the kernel's OOM killer sends SIGKILL here (a kill at the time limit is handled above).
    if oom or status == 137:
        mib = job.memory_bytes // 1024**2
        return GraderAnswer(
            {}, f"the grader ran out of its {mib} MiB of memory reading the run's output (is a saved file far "
            "larger than the lab's model once loaded?)",
        )  # fmt: skip
    return parse_answer(job, status, stdout, stderr)


@dataclass
class Standby:
    container_id: str
    work: Path  # host folder: package/ and input/, mounted read-only in the container
    memory_bytes: int
    cpus: float


class _StandbySlot:
    """This process's standby grader: at most one, made on a thread of its own."""

    def __init__(self, node: str) -> None:
        self.node, self.pid = node, os.getpid()
        self.ready: Standby | None = None
        self.making = self.closed = False
        self.lock = threading.Lock()
        self.maker: threading.Thread | None = None


_slot: _StandbySlot | None = None


def _here() -> _StandbySlot | None:
    slot = _slot
    return slot if slot is not None and slot.pid == os.getpid() else None  # never one inherited by a fork


def start_standby(node: str) -> None:
    """Keep a grader container on standby in this process (a worker process that grades)."""
    global _slot
    if _here() is None:
        _slot = _StandbySlot(node)
    _refill_standby()


def stop_standby() -> None:
    global _slot
    slot, _slot = _here(), None
    if slot is None:
        return
    with slot.lock:
        slot.closed = True
        standby, slot.ready, maker = slot.ready, None, slot.maker
    if standby is not None:
        _discard(standby)
    if maker is not None:
        # A standby being made as the process ends: once made it sees the slot closed and removes itself.
        maker.join(timeout=60)


def _take_standby(client, job: GraderJob) -> tuple[Standby, object] | None:
    """The standby and its container, at the job's CPU weight, if it suits the job (a lab asking for more memory
    or CPUs than it has gets a container of its own) and is still waiting (it leaves by itself after
    STANDBY_IDLE_SECONDS). One that cannot be used is removed, and the job gets a container of its own."""
    slot = _here()
    if slot is None:
        return None
    with slot.lock:
        standby = slot.ready
        if standby is None or (standby.memory_bytes, standby.cpus) != (job.memory_bytes, job.cpus):
            return None
        slot.ready = None
    try:
        container = client.containers.get(standby.container_id)
        if container.status == "running":
            if job.cpu_weight != POOL_CPU_WEIGHT:
                container.update(cpu_shares=job.cpu_weight)
            return standby, container
    except Exception:  # noqa: BLE001 - gone or unreachable: grade in a container of its own
        pass
    _discard(standby)
    _refill_standby()
    return None


def _refill_standby() -> None:
    slot = _here()
    if slot is None:
        return
    with slot.lock:
        if slot.closed or slot.making or slot.ready is not None:
            return
        slot.making = True

    def make() -> None:
        standby = None
        try:
            standby = _make_standby(slot.node)
        except Exception:
            log.warning("could not start a standby grader", exc_info=True)
        with slot.lock:
            slot.making = False
            keep = standby is not None and not slot.closed and slot is _here()
            if keep:
                slot.ready = standby
        if standby is not None and not keep:
            _discard(standby)

    slot.maker = threading.Thread(target=make, name="standby-grader", daemon=True)
    slot.maker.start()


def _make_standby(node: str) -> Standby | None:
    engine, unavailable = grader_engine()
    if engine is None:
        return None
    base = Path(settings.VAR_DIR) / "grading"
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="standby-", dir=base))
    try:
        write_package(work / "package")
        (work / "input").mkdir(mode=0o755)
        _readable(work / "input")
        template = GraderJob(
            source="", filename="", params={}, seed=0, probe_seed=0, ranks=1, cpu_weight=POOL_CPU_WEIGHT
        )
        limits = grader_limits(template)
        started = int(time.time())
        labels = {
            # The warm pool's labels: the reaper removes it when its worker is gone or its time is up.
            POOL_LABEL: "1", INSTANCE_LABEL: instance_id(), "faultline.worker": node, "faultline.pid": str(os.getpid()),
            "faultline.started": str(started),
            "faultline.deadline": str(started + STANDBY_IDLE_SECONDS + int(GRADER_TIMEOUT_SECONDS)),
        }  # fmt: skip
        request = f"{INPUT_MOUNT}/request.json"
        command = ["python3", "-P", "-m", "labs.grader_main", "--wait", str(STANDBY_IDLE_SECONDS), request]
        container = engine.containers.create(
            **_grader_config(limits, command, labels, work / "package", work / "input")
        )
        try:
            container.start()
        except Exception:
            container.remove(force=True)
            raise
        return Standby(container.id, work, template.memory_bytes, template.cpus)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        engine.close()


def _discard(standby: Standby) -> None:
    try:
        import docker

        docker.from_env(timeout=30).api.remove_container(standby.container_id, force=True)
    except Exception:  # noqa: BLE001 - the reaper removes it (it carries the pool's labels)
        log.warning("could not remove standby grader %s", standby.container_id[:12])
    shutil.rmtree(standby.work, ignore_errors=True)


def _on_standby(container, job: GraderJob, standby: Standby, on_running) -> GraderAnswer:
    """Grade on the standby: the inputs appear where it waits for them."""
    write_inputs(standby.work / "input", job, f"{INPUT_MOUNT}/artifacts")
    return _collect(container, job, grader_limits(job), start=False, on_running=on_running)


def _in_subprocess(job: GraderJob, package: Path, inputs: Path, work: Path) -> GraderAnswer:
    scratch = work / "scratch"
    scratch.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(package), "OMP_NUM_THREADS": "1",
        "HOME": str(scratch), "LANG": "C.UTF-8",
    }  # fmt: skip
    try:
        done = subprocess.run(
            [sys.executable, "-P", "-s", "-m", "labs.grader_main", str(inputs / "request.json")],
            capture_output=True, text=True, timeout=job.timeout_seconds, cwd=scratch, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise GraderFault(f"the grader of {job.filename} ran over {job.timeout_seconds:g} s") from None
    return parse_answer(job, done.returncode, done.stdout, done.stderr)


def parse_answer(job: GraderJob, status: int | None, stdout: str, stderr: str) -> GraderAnswer:
    lines = stdout.strip().splitlines()
    if status != 0 or not lines:
        tail = (stderr.strip().splitlines() or [f"exit status {status}, no output"])[-1]
        raise GraderFault(f"the grader of {job.filename} crashed: {tail[:300]}")
    try:
        answer = json.loads(lines[-1])
    except ValueError:
        raise GraderFault(f"the grader of {job.filename} did not end with its JSON answer") from None
    if "candidate_error" in answer:
        return GraderAnswer({}, str(answer["candidate_error"]))
    return GraderAnswer({str(k): float(v) for k, v in answer["metrics"].items()})

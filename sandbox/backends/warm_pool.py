"""Warm pool: pre-started, single-use lab containers, per worker process.

A cold run waits for a container to be created and started and for its ranks to import torch (seconds).
A pool container has done all of that ahead of time: it runs the harness in zygote mode
(``faultline_harness/_zygote.py``) with torch imported, and waits for ``control/job.json``.
``DockerSandbox.start`` takes one whose settings match the run exactly (image and every container
limit), writes the program and the job, and from there on treats it like a cold container, including
removing it afterwards. A container is never given a second run.

Each worker process that executes runs owns its pool (prefork children each have their own, started
from ``worker_process_init``): a container handed out by one process is never seen by another. Sizes
come from ``SANDBOX_WARM_POOL_CPU`` / ``SANDBOX_WARM_POOL_GPU`` (0 disables), for runs without and with
a GPU. The pool refills only while its process runs nothing, so a zygote importing torch never
competes with a running program for the cores. The mix of settings it keeps follows the last requests:
a pool of size N keeps containers for the last N runs' settings (the default run settings at first).

Pool containers carry ``faultline.pool=1``, the worker's node name, this process's pid, a start time
and a deadline (6 h later). The reaper (``sandbox/reaper.py``) removes those of a dead worker or
process and those idle past their deadline; the pool never hands out one within 15 minutes of it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, replace
from pathlib import Path

from django.conf import settings

from sandbox.backends import containerspec as spec
from sandbox.backends.base import ExecutionLimits
from sandbox.harness.faultline_harness.protocol import READY_LINE
from sandbox.instance import INSTANCE_LABEL, instance_id

log = logging.getLogger(__name__)

POOL_LABEL = "faultline.pool"
MAX_AGE_SECONDS = 6 * 3600
HANDOUT_MARGIN_SECONDS = 15 * 60
CHECK_SECONDS = 60.0
# A container waiting for a run is speculative work: it weighs on contended cores like validation does, and
# takes its run's weight when it is handed out (DockerSandbox._start_warm).
POOL_CPU_WEIGHT = 128
RETRY_SECONDS = 30.0
READY_SECONDS = 120.0  # a zygote still importing torch after this is removed and its settings count as broken
# Settings whose zygote died or stalled before any job (a memory limit too small for torch) are not
# tried again for this long: runs with them go cold instead of the pool churning containers.
BROKEN_SECONDS = 30 * 60


@dataclass(frozen=True)
class Profile:
    """What a container is made with, beyond the program: a run may only take a container whose
    profile equals its own (the run's deadline and artifact caps are enforced by the worker)."""

    image: str
    limits: ExecutionLimits

    @classmethod
    def of(cls, image: str, limits: ExecutionLimits) -> Profile:
        # The CPU weight is set when a run takes the container: validation and candidates share one pool.
        return cls(
            image,
            replace(limits, timeout_seconds=0, artifact_bytes=0, artifact_file_bytes=0, cpu_weight=POOL_CPU_WEIGHT),
        )

    @property
    def kind(self) -> str:
        return "gpu" if self.limits.gpu else "cpu"


@dataclass(frozen=True)
class Lease:
    container_id: str
    slot: Path  # host folder: program/ and control/, mounted read-only in the container
    profile: Profile
    deadline: float


def configured_sizes() -> dict[str, int]:
    sizes = {"cpu": settings.SANDBOX_WARM_POOL_CPU}
    if settings.SANDBOX_GPUS > 0:
        sizes["gpu"] = settings.SANDBOX_WARM_POOL_GPU
    return {kind: size for kind, size in sizes.items() if size > 0}


class WarmPool:
    def __init__(self, node: str, sizes: dict[str, int], image: str, base_dir: Path | None = None) -> None:
        self.node = node
        self.sizes = {kind: size for kind, size in sizes.items() if size > 0}
        self.image = image
        self.base_dir = base_dir or Path(settings.VAR_DIR) / "sandbox"
        self.pid = os.getpid()
        self._idle: dict[str, list[Lease]] = {kind: [] for kind in self.sizes}
        self._recent: dict[str, deque[Profile]] = {
            kind: deque([Profile.of(image, ExecutionLimits(gpu=kind == "gpu"))] * size, maxlen=size)
            for kind, size in self.sizes.items()
        }
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._filled = threading.Condition(self._lock)
        self._ready: set[str] = set()  # container ids whose zygote has finished importing
        self._broken: dict[Profile, float] = {}  # profile → when its zygote last died or stalled before a job
        self._active = 0
        self._closed = False
        self._client = None
        self._thread: threading.Thread | None = None

    # ---- used by DockerSandbox ---------------------------------------------------------------------

    def run_started(self, image: str, limits: ExecutionLimits) -> None:
        """Every run of this process, warm or cold: remembered for the refill, and no refill meanwhile."""
        profile = Profile.of(image, limits)
        with self._lock:
            self._active += 1
            if profile.kind in self._recent:
                self._recent[profile.kind].append(profile)

    def take(self, image: str, limits: ExecutionLimits) -> Lease | None:
        """A matching idle container, one whose zygote is ready first; a zygote still importing torch
        is still a head start over a cold container."""
        profile = Profile.of(image, limits)
        cutoff = time.time() + HANDOUT_MARGIN_SECONDS
        with self._lock:
            idle = self._idle.get(profile.kind, [])
            matching = [lease for lease in idle if lease.profile == profile and lease.deadline > cutoff]
            if not matching:
                return None
            lease = next((lease for lease in matching if lease.container_id in self._ready), matching[0])
            idle.remove(lease)
            self._ready.discard(lease.container_id)
            return lease

    def discard(self, lease: Lease) -> None:
        """A lease whose container turned out dead: clean up what is left of it."""
        self._remove(lease)

    def run_ended(self) -> None:
        with self._lock:
            self._active = max(0, self._active - 1)
        self._wake.set()

    @contextlib.contextmanager
    def held(self):
        """No refill meanwhile, as during a run: for the work after a run that someone waits for (its
        grading), which would otherwise share the cores with a new container importing torch."""
        with self._lock:
            self._active += 1
        try:
            yield
        finally:
            self.run_ended()

    # ---- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="sandbox-warm-pool", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def close(self) -> None:
        """Remove every idle container. Only in the process that made them: a forked child inherits
        this object (and its atexit entry) but not the containers."""
        if os.getpid() != self.pid:
            return
        with self._lock:
            self._closed = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            # A container the filler is creating right now would otherwise outlive the process.
            self._thread.join(timeout=30)
        with self._lock:
            leases = [lease for idle in self._idle.values() for lease in idle]
            for idle in self._idle.values():
                idle.clear()
        for lease in leases:
            self._remove(lease)

    def idle_count(self, kind: str = "cpu") -> int:
        with self._lock:
            return len(self._idle.get(kind, []))

    def wait_filled(self, timeout: float) -> bool:
        """Tests and the benchmark: block until every kind holds its full size of ready containers."""
        deadline = time.monotonic() + timeout
        with self._filled:
            while not self._full():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._filled.wait(remaining)
            return True

    def _full(self) -> bool:
        return all(
            len(self._idle[kind]) >= size and all(lease.container_id in self._ready for lease in self._idle[kind])
            for kind, size in self.sizes.items()
        )

    # ---- the filler thread -------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._lock:
                closed, busy = self._closed, self._active > 0
            if closed:
                return
            pause = CHECK_SECONDS
            if not busy:
                try:
                    self._maintain()
                except Exception:  # engine trouble: runs go cold meanwhile; try again later
                    log.warning("warm pool: could not refill", exc_info=True)
                    pause = RETRY_SECONDS
            self._wake.wait(pause)
            self._wake.clear()

    def _maintain(self) -> None:
        for kind, size in self.sizes.items():
            for lease in self._surplus(kind):
                self._remove(lease)
            while True:
                with self._lock:
                    if self._closed or self._active > 0:
                        return  # a run started: it gets the cores, the pool waits for the next quiet moment
                    missing = Counter(self._recent[kind]) - Counter(lease.profile for lease in self._idle[kind])
                    now = time.time()
                    wanted = [p for p in missing if now - self._broken.get(p, -BROKEN_SECONDS) >= BROKEN_SECONDS]
                    if not wanted or len(self._idle[kind]) >= size:
                        break
                    profile = wanted[0]
                lease = self._create(profile)
                with self._lock:
                    closed = self._closed
                    if not closed:
                        self._idle[kind].append(lease)
                if closed:
                    self._remove(lease)
                    return
                # One zygote at a time: several importing torch at once would only slow each other down.
                self._await_ready(lease)

    def _surplus(self, kind: str) -> list[Lease]:
        """Take out of the pool the idle containers that are too close to their deadline, and, when the
        pool is full, those of settings the recent runs no longer ask for (oldest first)."""
        cutoff = time.time() + HANDOUT_MARGIN_SECONDS + CHECK_SECONDS
        with self._lock:
            keep = [lease for lease in self._idle[kind] if lease.deadline > cutoff]
            out = [lease for lease in self._idle[kind] if lease.deadline <= cutoff]
            if len(keep) >= self.sizes[kind]:
                extra = Counter(lease.profile for lease in keep) - Counter(self._recent[kind])
                for lease in list(keep):
                    if extra[lease.profile] > 0:
                        extra[lease.profile] -= 1
                        keep.remove(lease)
                        out.append(lease)
            self._idle[kind] = keep
        return out

    def _await_ready(self, lease: Lease) -> None:
        api = self._docker().api
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            with self._lock:
                if self._closed or all(lease is not other for other in self._idle[lease.profile.kind]):
                    return  # closing, or already handed to a run
            last = api.logs(lease.container_id, stdout=True, stderr=False, tail=1)
            if READY_LINE.encode() in last:
                with self._lock:
                    self._ready.add(lease.container_id)
                    self._filled.notify_all()
                return
            if not api.inspect_container(lease.container_id)["State"]["Running"]:
                self._give_up(lease, "exited before its job")
                return
            time.sleep(0.1)
        # Too little memory can make the torch import thrash on evicted library pages instead of being
        # killed: such a container would hold its memory and never serve, so it counts as broken too.
        self._give_up(lease, f"is not ready after {READY_SECONDS}s")

    def _give_up(self, lease: Lease, why: str) -> None:
        with self._lock:
            idle = self._idle[lease.profile.kind]
            if all(lease is not other for other in idle):
                return  # handed to a run meanwhile: the run's own checks deal with it
            self._idle[lease.profile.kind] = [other for other in idle if other is not lease]
            self._broken[lease.profile] = time.time()
        log.warning("warm pool: the zygote in %s %s", lease.container_id[:12], why)
        self._remove(lease)

    def _docker(self):
        if self._client is None:
            import docker

            self._client = docker.from_env(timeout=60)
        return self._client

    def _create(self, profile: Profile) -> Lease:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        slot = Path(tempfile.mkdtemp(prefix="pool-", dir=self.base_dir))
        container = None
        try:
            for name in ("program", "control"):
                (slot / name).mkdir()
                (slot / name).chmod(0o755)
            started = int(time.time())
            deadline = started + MAX_AGE_SECONDS
            labels = {
                POOL_LABEL: "1",
                INSTANCE_LABEL: instance_id(),
                "faultline.worker": self.node,
                "faultline.pid": str(self.pid),
                "faultline.started": str(started),
                "faultline.deadline": str(deadline),
            }
            config = spec.container_config(
                profile.image, profile.limits, spec.launcher_command(spec.ZYGOTE_ARGS), dict(spec.BASE_ENV), labels,
                {slot / "program": spec.PROGRAM, slot / "control": spec.CONTROL},
            )  # fmt: skip
            container = self._docker().containers.create(**config)
            container.start()
            return Lease(container_id=container.id, slot=slot, profile=profile, deadline=deadline)
        except BaseException:
            if container is not None:
                _quietly(lambda: container.remove(force=True))
            shutil.rmtree(slot, ignore_errors=True)
            raise

    def _remove(self, lease: Lease) -> None:
        try:
            self._docker().api.remove_container(lease.container_id, force=True)
        except Exception:  # gone already, or the reaper gets it
            log.debug("warm pool: could not remove %s", lease.container_id[:12], exc_info=True)
        shutil.rmtree(lease.slot, ignore_errors=True)


def _quietly(action) -> None:
    try:
        action()
    except Exception:  # noqa: BLE001
        pass


# ---- one pool per process --------------------------------------------------------------------------

_pool: WarmPool | None = None
_pool_lock = threading.Lock()


def current() -> WarmPool | None:
    """This process's pool, if it started one (never one inherited across a fork)."""
    pool = _pool
    return pool if pool is not None and pool.pid == os.getpid() else None


@contextlib.contextmanager
def held():
    """``WarmPool.held`` of this process's pool; nothing where it has none."""
    pool = current()
    with pool.held() if pool is not None else contextlib.nullcontext():
        yield


def start_pool(node: str) -> WarmPool | None:
    """Start filling this process's pool, when the Docker backend is in use and a size is set."""
    global _pool
    sizes = configured_sizes()
    if not sizes:
        return None
    from sandbox.selection import choose_backend

    choice = choose_backend()
    if not (choice.ok and choice.name == "docker"):
        return None
    from sandbox.images.tags import image_tag

    with _pool_lock:
        if current() is not None:
            return current()
        pool = WarmPool(node, sizes, image_tag("cpu"))
        pool.start()
        _pool = pool
        log.info("warm pool started in pid %s: %s", pool.pid, sizes)
        return pool


def stop_pool() -> None:
    global _pool
    with _pool_lock:
        pool = current()
        _pool = None
    if pool is not None:
        pool.close()

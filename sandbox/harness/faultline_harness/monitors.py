"""The launcher's watchers: memory samples (per rank and, in a container, the container's) and heartbeats.

They run on their own threads beside the readers, and everything they emit is a launcher event: the
ranks cannot write these lines (see ``guard``), so the platform may grade on them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from . import procfs
from .cgroupmem import ContainerMemory
from .protocol import CONTAINER_MEMORY, HEARTBEAT, MEMORY
from .streams import Emitter


class WatchedRank(Protocol):
    index: int
    peak_rss: int
    last_progress: float

    @property
    def pid(self) -> int: ...

    @property
    def running(self) -> bool: ...


class Monitors:
    def __init__(
        self,
        emitter: Emitter,
        ranks: Callable[[], Sequence[WatchedRank]],
        sample_interval: float,
        heartbeat_interval: float,
        container: ContainerMemory | None,
    ) -> None:
        self.emitter = emitter
        self._ranks = ranks
        self.sample_interval = sample_interval
        self.heartbeat_interval = heartbeat_interval
        self.container = container
        self.container_peak = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for target, name in ((self._memory_loop, "fl-memory"), (self._heartbeat_loop, "fl-heartbeat")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(2.0)

    def _memory_loop(self) -> None:
        while True:
            try:
                self.sample_memory()
            except Exception as exc:  # noqa: BLE001 - telemetry must not stop supervision
                self.emitter.write_line(f"[harness] memory sampling failed: {exc!r}")
            if self._stop.wait(self.sample_interval):
                return

    def sample_memory(self) -> None:
        stats = procfs.all_stats()
        for rank in list(self._ranks()):
            if not rank.running:
                continue
            rss_total = pss_total = count = 0
            pss_known = True
            tree = procfs.process_tree(rank.pid, stats)
            for pid in tree:
                usage = procfs.memory_of(pid)
                if usage is None:
                    continue  # exited between the scan and the read
                rss, pss = usage
                count += 1
                rss_total += rss
                if pss is None:
                    pss_known = False
                else:
                    pss_total += pss
            if count == 0 or not rank.running:
                continue
            rank.peak_rss = max(rank.peak_rss, rss_total)
            self.emitter.event(
                MEMORY,
                rank=rank.index,
                rss_bytes=rss_total,
                pss_bytes=pss_total if pss_known else None,
                processes=count,
                cpu_seconds=round(procfs.cpu_seconds(tree, stats), 3),
            )
        self.sample_container()

    def sample_container(self) -> None:
        if self.container is None:
            return
        sample = self.container.sample()
        if sample is None:
            return
        self.container_peak = max(self.container_peak, sample.bytes)
        self.emitter.event(
            CONTAINER_MEMORY,
            anon_bytes=sample.anon_bytes,
            shmem_bytes=sample.shmem_bytes,
            usage_bytes=sample.usage_bytes,
            cpu_seconds=sample.cpu_seconds,
            # The launcher's own share of the container's anonymous memory: the records it keeps for the
            # ranks and its buffers are the platform's, and a leak check subtracts them.
            launcher_anon_bytes=procfs.anon_bytes(),
        )

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_interval):
            now = time.monotonic()
            alive = [r for r in self._ranks() if r.running]
            self.emitter.event(
                HEARTBEAT,
                alive=[r.index for r in alive],
                since_progress={str(r.index): round(now - r.last_progress, 3) for r in alive},
            )

"""The container's memory and CPU time as its cgroup accounts them (v2 or v1), read by the launcher.

The per-rank figures from ``/proc`` miss memory that belongs to no process: files a program writes to
the container's tmpfs (``/work``, ``/tmp``) or ``/dev/shm``. The cgroup charges those pages to the
container, so anonymous + shared memory here is what a leak cannot hide from by moving its cache into
a file. The launcher reads this only when told it runs in a container of its own (``--container-memory``):
outside one, the same files describe the host or the user's session. The CPU time is the clock a leak
check's warm-up is measured on: a program can sleep, but cannot make work it has done unhappen.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class ContainerSample:
    anon_bytes: int
    shmem_bytes: int
    usage_bytes: int
    # CPU time the whole container has used, in seconds (None where the cgroup does not say).
    cpu_seconds: float | None = None

    @property
    def bytes(self) -> int:
        """What a leak check measures: anonymous memory plus tmpfs/shm pages, no page cache."""
        return self.anon_bytes + self.shmem_bytes


class ContainerMemory:
    def __init__(self, stat: Path, usage: Path, anon_key: str, cpu: Path | None = None) -> None:
        self._stat = stat
        self._usage = usage
        self._anon_key = anon_key
        self._cpu = cpu

    @classmethod
    def find(cls, root: Path = ROOT) -> ContainerMemory | None:
        if (root / "memory.stat").is_file():  # cgroup v2, the container's own namespace
            return cls(root / "memory.stat", root / "memory.current", "anon", root / "cpu.stat")
        v1 = root / "memory"
        if (v1 / "memory.stat").is_file():
            # v1 calls anonymous memory "rss"; it does not include shmem, which has its own line.
            return cls(v1 / "memory.stat", v1 / "memory.usage_in_bytes", "rss", root / "cpuacct" / "cpuacct.usage")
        return None

    def sample(self) -> ContainerSample | None:
        try:
            stat = self._stat.read_text()
            usage = int(self._usage.read_text().strip() or 0)
        except (OSError, ValueError):
            return None
        values: dict[str, int] = {}
        for line in stat.splitlines():
            key, _, value = line.partition(" ")
            if key in (self._anon_key, "shmem"):
                try:
                    values[key] = int(value)
                except ValueError:
                    return None
        if self._anon_key not in values:
            return None
        return ContainerSample(values[self._anon_key], values.get("shmem", 0), usage, self._cpu_seconds())

    def _cpu_seconds(self) -> float | None:
        if self._cpu is None:
            return None
        try:
            text = self._cpu.read_text()
        except OSError:
            return None
        try:
            if self._cpu.name == "cpu.stat":  # v2: "usage_usec N" among other lines
                for line in text.splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return round(int(value) / 1e6, 3)
                return None
            return round(int(text.strip()) / 1e9, 3)  # v1 cpuacct.usage: nanoseconds
        except ValueError:
            return None

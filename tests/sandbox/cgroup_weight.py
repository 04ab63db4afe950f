"""What a program or grader sees of its container's CPU weight, and what a Docker ``cpu_shares`` becomes."""

from __future__ import annotations

# Prints "cpu.shares N" (cgroup v1) or "cpu.weight N" (cgroup v2) from inside the container.
READ_WEIGHT = """
from pathlib import Path

for path in ("/sys/fs/cgroup/cpu/cpu.shares", "/sys/fs/cgroup/cpu.weight"):
    if Path(path).exists():
        print(path.rsplit("/", 1)[1], Path(path).read_text().strip(), flush=True)
        break
else:
    print("no cpu weight file", flush=True)
"""


def as_seen_inside(shares: int, file: str) -> int:
    """Docker's cpu_shares as the container's cgroup file shows it (runc's conversion for cgroup v2)."""
    return shares if file == "cpu.shares" else 1 + (shares - 2) * 9999 // 262142

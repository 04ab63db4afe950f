"""Small readers for Linux /proc, shared by the launcher and the diag CLI (standard library only)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    start_ticks: int
    # utime + stime of the process and of the children it has waited for, in clock ticks: summed over a
    # process tree, every CPU second the tree spent is counted once (a reaped child's time moved to its
    # parent), whether the tree is alive or sleeping.
    cpu_ticks: int = 0


def read_stat(pid: int) -> ProcStat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", errors="replace")
    except OSError:
        return None
    # The command name sits in parentheses and may itself contain spaces or ")", so split on the last one.
    close = raw.rfind(")")
    if close < 0:
        return None
    fields = raw[close + 2 :].split()
    try:
        return ProcStat(
            pid=pid,
            state=fields[0],
            ppid=int(fields[1]),
            pgrp=int(fields[2]),
            session=int(fields[3]),
            start_ticks=int(fields[19]),
            cpu_ticks=sum(int(fields[i]) for i in range(11, 15)),
        )
    except (IndexError, ValueError):
        return None


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pids: list[int], stats: dict[int, ProcStat]) -> float:
    """CPU time the given processes (and the children they reaped) have used, in seconds."""
    return sum(stats[pid].cpu_ticks for pid in pids if pid in stats) / CLOCK_TICKS


def anon_bytes(pid: int | str = "self") -> int:
    """Anonymous memory resident for one process (``RssAnon``), 0 when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def all_stats() -> dict[int, ProcStat]:
    stats: dict[int, ProcStat] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return stats
    for name in names:
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None:
                stats[stat.pid] = stat
    return stats


def is_alive(stat: ProcStat | None) -> bool:
    return stat is not None and stat.state not in ("Z", "X", "x")


def process_tree(root: int, stats: dict[int, ProcStat]) -> list[int]:
    """``root`` plus every live descendant, plus anything still in root's session.

    The session catch-all matters because a grandchild whose parent died gets re-parented away from
    the rank, yet it still belongs to the rank's session (ranks are started as session leaders).
    """
    children: dict[int, list[int]] = {}
    for stat in stats.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in found:
            continue
        found.add(pid)
        stack.extend(children.get(pid, ()))
    found.update(s.pid for s in stats.values() if s.session == root)
    return sorted(pid for pid in found if is_alive(stats.get(pid)))


def memory_of(pid: int) -> tuple[int, int | None] | None:
    """(rss_bytes, pss_bytes or None) for one process, or None when it has gone away."""
    rss = pss = None
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith(b"Pss:"):
                    pss = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass  # older kernels or hardened /proc: fall back to VmRSS below
    if rss is None:
        pss = None
        try:
            with open(f"/proc/{pid}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"VmRSS:"):
                        rss = int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError, IndexError):
            return None
        if rss is None:
            rss = 0  # kernel threads and zombies have no VmRSS line
    return rss, pss


def signal_masks(pid: int) -> tuple[int, int] | None:
    """(caught, blocked) signal bitmasks of a process's main thread; bit ``n - 1`` is signal ``n``."""
    caught = blocked = None
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"SigCgt:"):
                    caught = int(line.split()[1], 16)
                elif line.startswith(b"SigBlk:"):
                    blocked = int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        return None
    if caught is None or blocked is None:
        return None
    return caught, blocked


def has_signal(mask: int, signum: int) -> bool:
    return bool(mask >> (signum - 1) & 1)

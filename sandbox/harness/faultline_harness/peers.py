"""Which rank is on the other end of a launcher service's Unix socket, from the kernel's word.

``SO_PEERCRED`` gives the pid of the process that connected; the connection counts for the rank whose
process that is or descends from. A rank's pid is matched together with its start time, so a process
that later gets a dead rank's pid again is not taken for that rank.
"""

from __future__ import annotations

import socket
import struct

from . import procfs

# pid -> (rank, the process's start time in clock ticks since boot, or None when it was not readable)
RankPids = dict[int, tuple[int, int | None]]
MAX_DEPTH = 64


def peer_pid(conn: socket.socket) -> int:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return 0
    return struct.unpack("3i", creds)[0]


def rank_of(pid: int, ranks: RankPids) -> int | None:
    """The rank ``pid`` belongs to (itself or an ancestor is the rank's process), or None."""
    for _ in range(MAX_DEPTH):
        if pid <= 1:
            return None
        stat = procfs.read_stat(pid)
        if stat is None:
            return None
        if pid in ranks:
            rank, started = ranks[pid]
            return rank if started is None or started == stat.start_ticks else None
        pid = stat.ppid
    return None

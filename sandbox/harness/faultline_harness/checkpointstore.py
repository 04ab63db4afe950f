"""A simulated shared checkpoint store that lives in the launcher, outside every rank.

A lab about racing a slow checkpoint save needs a store whose writes really take time. Simulated in the
candidate's process (a ``time.sleep`` per chunk in the client), the slowness is the candidate's to patch
away, and a fast store makes the race too rare to catch. Here the store is a thread of the launcher (PID 1
of the container, not dumpable, see ``guard.py``): it takes a save's bytes off its Unix socket no faster
than ``mb_per_s`` (one save at a time, so saves in parallel share the bandwidth), keeps checkpoints in its
own memory, and lists or serves a checkpoint only once every byte of it has arrived. A rank cannot place a
file where the store looks, because the store does not look at files.

It counts completed saves and the loads it served, per rank: the rank is the one whose process (or a
descendant of it) opened the connection, from the kernel's ``SO_PEERCRED``, so one rank cannot load in
another's name. The counts leave through the launcher's ``end`` event only.

A store given ``save_s_min``/``save_s_max`` makes each save last a duration drawn in that range with
``secrets`` (at least what the bandwidth takes), in the launcher's memory where no rank can read it, and
notes how long after a checkpoint was complete each rank first loaded it (``max_load_delay_ms``). A rank
that waits for the writer loads it at once; one that waits a fixed time instead cannot know the draw, and
either loads too early (the checkpoint is not there yet) or well after it was complete.

Wire format, little-endian. A request is ``<BHQ`` (op, name length, payload length), the name (UTF-8),
then the payload. The answer is ``<BQ`` (status, length) and that many bytes.

- ``SAVE`` name, payload = the checkpoint: answered once it is stored; the answer's bytes are the name.
- ``LATEST`` name = a prefix: the greatest stored name with that prefix, or status ``MISSING``.
- ``LOAD`` name: the checkpoint's bytes, or status ``MISSING``.
"""

from __future__ import annotations

import secrets
import socket
import struct
import threading
import time
from pathlib import Path

from .socketservice import RankedService, recv_exact

REQUEST = struct.Struct("<BHQ")
ANSWER = struct.Struct("<BQ")
SAVE, LATEST, LOAD = 1, 2, 3
OK, MISSING, REFUSED = 0, 1, 2
SOCKET_NAME = "checkpoint-store.sock"
MAX_NAME = 200
MAX_CHECKPOINT = 64 * 1024 * 1024
MAX_STORED = 256 * 1024 * 1024  # the store's memory is the container's: a bound, not a real quota
CHUNK = 64 * 1024
LIMITS = {"mb_per_s": (0.01, 1000.0), "save_s_min": (0.0, 60.0), "save_s_max": (0.0, 60.0)}
OPTIONAL = ("save_s_min", "save_s_max")


class CheckpointStore(RankedService):
    """Bind in the constructor (no thread yet: ranks are created right after); ``set_ranks`` once the ranks
    exist, then ``start``. Connections made before that wait in the backlog."""

    socket_name = SOCKET_NAME
    thread_name = "fl-checkpoint-store"

    def __init__(self, folder: Path, mb_per_s: float, save_seconds: tuple[float, float] | None = None) -> None:
        super().__init__(folder)
        self.bytes_per_s = mb_per_s * 1e6
        self.save_seconds = save_seconds
        self._completed: dict[str, float] = {}  # name → when its last save was complete (monotonic)
        self._first_loads: set[tuple[int, str]] = set()
        self._max_load_delay = 0.0
        self._lock = threading.Lock()
        self._bandwidth = threading.Lock()  # the store's one write path
        self._stored: dict[str, bytes] = {}
        self._saves = 0
        self._loads: dict[int, int] = {}

    def counts(self) -> dict[str, int]:
        with self._lock:
            counts = {"saves": self._saves, "loads": sum(self._loads.values())}
            ranks = self.ranks()
            for rank in ranks:
                counts[f"loads_rank{rank}"] = self._loads.get(rank, 0)
            counts["min_rank_loads"] = min((self._loads.get(rank, 0) for rank in ranks), default=0)
            counts["max_load_delay_ms"] = round(self._max_load_delay * 1000)
            return counts

    def serve(self, conn: socket.socket) -> None:
        rank = self.rank_of(conn)
        while not self._closed.is_set():
            header = recv_exact(conn, REQUEST.size)
            if header is None:
                return
            op, name_len, size = REQUEST.unpack(header)
            raw_name = recv_exact(conn, name_len) if name_len <= MAX_NAME else None
            name = _name(raw_name)
            if name is None or op not in (SAVE, LATEST, LOAD) or (op != SAVE and size):
                return  # not the protocol: close rather than guess where the next request starts
            if op == SAVE:
                status, body = self._save(conn, name, size)
                if status is None:
                    return
            elif op == LATEST:
                with self._lock:
                    names = [n for n in self._stored if n.startswith(name)]
                status, body = (OK, max(names).encode()) if names else (MISSING, b"")
            else:
                status, body = self._load(name, rank)
            conn.sendall(ANSWER.pack(status, len(body)) + body)

    def _save(self, conn: socket.socket, name: str, size: int) -> tuple[int | None, bytes]:
        if not name or size > MAX_CHECKPOINT:
            return None, b""
        parts: list[bytes] = []
        with self._bandwidth:
            # Paced here, on the store's side: each chunk is taken off the socket no sooner than the bandwidth
            # allows, so the client's sendall simply blocks, whatever the client does about time.
            started = time.monotonic()
            lasts = secrets.SystemRandom().uniform(*self.save_seconds) if self.save_seconds else 0.0
            received = 0
            while received < size:
                chunk = conn.recv(min(CHUNK, size - received))
                if not chunk or self._closed.is_set():
                    return None, b""  # a save that never completes is never visible
                parts.append(chunk)
                received += len(chunk)
                wait = started + received / self.bytes_per_s - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            if self._closed.wait(max(0.0, started + lasts - time.monotonic())):
                return None, b""
        data = b"".join(parts)
        with self._lock:
            held = sum(len(v) for k, v in self._stored.items() if k != name)
            if held + len(data) > MAX_STORED:
                return REFUSED, b"the store is full"
            self._stored[name] = data
            self._saves += 1
            self._completed[name] = time.monotonic()
            self._first_loads = {seen for seen in self._first_loads if seen[1] != name}  # a new version: load anew
        return OK, name.encode()

    def _load(self, name: str, rank: int | None) -> tuple[int, bytes]:
        with self._lock:
            data = self._stored.get(name)
            if data is None:
                return MISSING, b""
            if rank is not None:
                self._loads[rank] = self._loads.get(rank, 0) + 1
                if (rank, name) not in self._first_loads:
                    self._first_loads.add((rank, name))
                    delay = time.monotonic() - self._completed[name]
                    self._max_load_delay = max(self._max_load_delay, delay)
        return OK, data


def _name(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return name if name.isprintable() else None

"""The shape every launcher service shares: a Unix socket in the run folder, served by threads of the
trusted launcher, which the ranks can connect to but never replace or slow for each other.

A subclass answers one connection in :meth:`SocketService.serve` and says what it counted in
:meth:`SocketService.counts`; accepting, the connection cap, the socket's place and its removal live here.
"""

from __future__ import annotations

import array
import os
import socket
import struct
import tempfile
import threading
from collections import deque
from pathlib import Path

from . import peers

MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes; a longer run folder gets a temp dir
MAX_CONNECTIONS = 64


class SocketService:
    socket_name = "service.sock"
    thread_name = "fl-service"

    def __init__(self, folder: Path) -> None:
        self._connections = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._closed = threading.Event()
        path = Path(folder) / self.socket_name
        self._own_dir: Path | None = None
        if len(str(path)) > MAX_SOCKET_PATH:
            self._own_dir = Path(tempfile.mkdtemp(prefix=f"{self.thread_name}-"))
            self._own_dir.chmod(0o755)
            path = self._own_dir / self.socket_name
        self.path = path
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Set on the listener, so the kernel stamps even bytes sent before the connection is accepted with
        # their writer's pid (see WriterReader); accepted connections inherit it.
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self._listener.bind(str(path))
        self._listener.listen(128)

    def fileno(self) -> int:
        return self._listener.fileno()

    def counts(self) -> dict[str, int]:
        raise NotImplementedError

    def serve(self, conn: socket.socket) -> None:
        """Answer one connection until it closes; an OSError ends it quietly."""
        raise NotImplementedError

    def start(self) -> None:
        threading.Thread(target=self._accept, name=self.thread_name, daemon=True).start()

    def stop(self) -> dict[str, int]:
        """Stop serving, remove the socket and return the final counts."""
        self._closed.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        try:
            self.path.unlink()
        except OSError:
            pass
        if self._own_dir is not None:
            try:
                self._own_dir.rmdir()
            except OSError:
                pass
        return self.counts()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            # A program that opens thousands of connections gets the first MAX_CONNECTIONS served; the rest
            # wait here, which costs it time and gives it nothing.
            self._connections.acquire()
            threading.Thread(target=self._serve_one, args=(conn,), name=f"{self.thread_name}-conn", daemon=True).start()

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            with conn:
                self.serve(conn)
        except OSError:
            return
        finally:
            self._connections.release()


def recv_exact(conn: socket.socket, size: int) -> bytes | None:
    """Exactly ``size`` bytes, or None when the peer closes first."""
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


_CREDS = struct.Struct("3i")  # struct ucred: pid, uid, gid


class WriterReader:
    """Reads a connection's bytes together with the pid of the process that *wrote* them.

    ``SO_PEERCRED`` names the process that connected, but a connected socket can be handed to another process
    (``SCM_RIGHTS``, or simply inherited across ``fork``), which then writes on it under the connector's name.
    With ``SO_PASSCRED`` on the receiving socket, the kernel stamps every write with the writing process's pid
    (a process without ``CAP_SYS_ADMIN`` cannot claim another's) and never joins bytes of two writers in one
    ``recvmsg``, so each byte read here is known by who wrote it. A write the kernel did not stamp reads as
    pid 0, which belongs to no rank."""

    CHUNK = 1 << 16

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._chunks: deque[tuple[memoryview, int]] = deque()

    def _fill(self) -> bool:
        data, ancillary, _flags, _addr = self._conn.recvmsg(self.CHUNK, socket.CMSG_SPACE(_CREDS.size))
        if not data:
            return False
        pid = 0
        for level, kind, payload in ancillary:
            if level != socket.SOL_SOCKET:
                continue
            if kind == socket.SCM_CREDENTIALS and len(payload) >= _CREDS.size:
                pid = _CREDS.unpack_from(payload)[0]
            elif kind == socket.SCM_RIGHTS:
                # Descriptors a client attached to its bytes: never the launcher's to keep open.
                for fd in array.array("i", payload[: len(payload) - len(payload) % 4]):
                    os.close(fd)
        self._chunks.append((memoryview(data), pid))
        return True

    def read_exact(self, size: int) -> tuple[bytes, frozenset[int]] | None:
        """Exactly ``size`` bytes and the pids of every process that wrote part of them; None when the peer
        closes first."""
        data = bytearray()
        writers: set[int] = set()
        while len(data) < size:
            if not self._chunks and not self._fill():
                return None
            chunk, pid = self._chunks[0]
            take = min(size - len(data), len(chunk))
            data += chunk[:take]
            writers.add(pid)
            if take == len(chunk):
                self._chunks.popleft()
            else:
                self._chunks[0] = (chunk[take:], pid)
        return bytes(data), frozenset(writers)


class RankedService(SocketService):
    """A service that knows which rank each connection comes from: the rank whose process (or a descendant
    of it) connected, from the kernel's ``SO_PEERCRED``, never from anything the client sends.
    ``set_ranks`` once the ranks exist, before ``start``."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self._rank_pids: peers.RankPids = {}

    def set_ranks(self, pids: peers.RankPids) -> None:
        """``{pid: (rank, start ticks)}`` of the rank processes."""
        self._rank_pids = dict(pids)

    def ranks(self) -> list[int]:
        return sorted({rank for rank, _ in self._rank_pids.values()})

    def rank_of(self, conn: socket.socket) -> int | None:
        return peers.rank_of(peers.peer_pid(conn), self._rank_pids)

    def rank_of_writers(self, conn: socket.socket, writers: frozenset[int]) -> int | None:
        """The rank that both connected and wrote every one of the bytes (``WriterReader``), else None: a
        socket another rank's process connected and handed over writes for nobody."""
        rank = self.rank_of(conn)
        if rank is None or any(peers.rank_of(pid, self._rank_pids) != rank for pid in writers):
            return None
        return rank

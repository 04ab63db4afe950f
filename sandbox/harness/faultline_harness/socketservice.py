"""The shape every launcher service shares: a Unix socket in the run folder, served by threads of the
trusted launcher, which the ranks can connect to but never replace or slow for each other.

A subclass answers one connection in :meth:`SocketService.serve` and says what it counted in
:meth:`SocketService.counts`; accepting, the connection cap, the socket's place and its removal live here.
"""

from __future__ import annotations

import socket
import tempfile
import threading
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

"""Per-rank secret keys that the launcher draws, hands each rank its own of, and writes out for the grader.

Some labs give every rank data that only that rank can generate (a node's part files, a site's export):
the rows are derived from a key, and no other rank may learn it. A key the rank drew for itself would do
for secrecy, but not for grading: the grader has to regenerate the rows the job was meant to train on, and
a key that reaches it from the rank's own process is the program's to replace (a program can seal a record
of its own choosing and exit before the hidden entry's). So the launcher draws the keys with ``secrets``
and keeps them in its own memory (PID 1, not dumpable). A rank gets its key by connecting to this service:
the kernel (``SO_PEERCRED``) says which rank connected, never anything the client sends, so a rank can
learn no key but its own. Once every process of the job is gone, the launcher writes each rank's key into
the output folder under the lab's file name (``key-rank{rank}.json``: ``{"rank": 0, "key": 123}``), over
whatever a rank left there.

Wire format: the client sends nothing; the answer is ``<Q``, the key. A connection from outside the ranks
is closed without an answer.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import struct
import threading
from pathlib import Path

from . import peers
from .protocol import ENV_OUTPUT_DIR, ENV_RANK_KEYS
from .sealedrecords import write_owned
from .socketservice import RankedService, recv_exact

ANSWER = struct.Struct("<Q")
SOCKET_NAME = "rank-keys.sock"
KEY_BITS = 48


class RankKeys(RankedService):
    """Bind in the constructor; ``set_ranks`` (which draws the keys) once the ranks exist, then ``start``;
    ``restore`` once every process of the job is gone, then ``stop``."""

    socket_name = SOCKET_NAME
    thread_name = "fl-rank-keys"

    def __init__(self, folder: Path, file: str) -> None:
        super().__init__(folder)
        self.file = file
        self._lock = threading.Lock()
        self._keys: dict[int, int] = {}
        self._served = 0
        self._refused = 0

    def set_ranks(self, pids: peers.RankPids) -> None:
        super().set_ranks(pids)
        with self._lock:
            self._keys = {rank: secrets.randbits(KEY_BITS) for rank in self.ranks()}

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"served": self._served, "refused": self._refused}

    def serve(self, conn: socket.socket) -> None:
        rank = self.rank_of(conn)
        with self._lock:
            key = self._keys.get(rank) if rank is not None else None
            if key is None or self._closed.is_set():
                self._refused += 1
                return
            self._served += 1
        conn.sendall(ANSWER.pack(key))

    def restore(self, output_dir: Path) -> None:
        """Write every rank's key into ``output_dir``; only once no process of the job is left."""
        self._closed.set()
        with self._lock:
            keys = dict(self._keys)
        for rank, key in keys.items():
            write_owned(output_dir / key_file_name(self.file, rank), key_record(rank, key))


def key_file_name(pattern: str, rank: int) -> str:
    return pattern.replace("{rank}", str(rank))


def key_record(rank: int, key: int) -> bytes:
    return json.dumps({"rank": rank, "key": key}).encode()


def fetch(timeout: float = 30.0) -> int | None:
    """Rank side: this rank's key from the launcher, or None when the run has no key service."""
    address = os.environ.get(ENV_RANK_KEYS)
    if not address:
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(address)
            answer = recv_exact(conn, ANSWER.size)
    except OSError:
        return None
    return ANSWER.unpack(answer)[0] if answer is not None else None


def fetch_or_draw(file: str) -> int:
    """Rank side, for a graded run's hidden entry: the launcher's key for this rank; where the run has no key
    service (a program run outside the sandbox), a key drawn here and written where the grader looks."""
    key = fetch()
    if key is not None:
        return key
    if os.environ.get(ENV_RANK_KEYS):
        # The service exists but did not answer: going on with a key of our own would grade the run
        # against rows the grader cannot rebuild.
        raise RuntimeError("faultline: the launcher did not hand this rank its key")
    rank = int(os.environ.get("RANK", "0"))
    key = secrets.randbits(KEY_BITS)
    folder = Path(os.environ.get(ENV_OUTPUT_DIR, "."))
    (folder / key_file_name(file, rank)).write_bytes(key_record(rank, key))
    return key

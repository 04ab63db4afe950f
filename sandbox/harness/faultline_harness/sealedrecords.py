"""Per-rank grading records that only their own rank can write, kept by the launcher.

A graded run's hidden entry notes, inside each rank, what that rank did (step fingerprints, the key of
its site's data) and leaves it in the output folder for the grader. Every rank can write that folder:
they share one uid, so file permissions cannot keep rank 0 from rewriting rank 1's record once rank 1
has gone. So a rank hands its record to the launcher instead, over a Unix socket, and the launcher
knows who is sending from the kernel (``SO_PEERCRED``: the connecting process, which must be the rank
or a descendant of it; ``SO_PASSCRED``: the process that wrote each byte, which must be of the same
rank, so a connection handed to another rank's process seals nothing). It accepts a record only under
the rank's own name (a lab declares the names, e.g. ``grading-rank{rank}.pt``) and keeps the bytes in
its own memory (it is PID 1 and not dumpable). When the run ends, after every process of the job has
been killed, it writes each declared record into the output folder from that copy, and removes any
file under a declared name that no rank sealed: the grader reads what the rank itself sent, or nothing.

Wire format, little-endian: ``<HQ`` (name length, payload length), the name (UTF-8), the payload. The
answer is one byte: 0 sealed, 1 refused (not this rank's name, too large, or not a rank).
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import tempfile
import threading
from pathlib import Path

from .protocol import ENV_SEALED_RECORDS
from .socketservice import RankedService, WriterReader

REQUEST = struct.Struct("<HQ")
SEALED, REFUSED = 0, 1
SOCKET_NAME = "sealed-records.sock"
MAX_RECORD = 16 * 1024 * 1024
MAX_TOTAL = 64 * 1024 * 1024
MAX_FILES = 8
MAX_NAME = 100


def check_files(files: object) -> str:
    """Why ``files`` is not a list of record names the launcher can own ("" when it is)."""
    if not isinstance(files, list) or not 1 <= len(files) <= MAX_FILES:
        return f"a list of 1–{MAX_FILES} file names, got {files!r}"
    for name in files:
        if not isinstance(name, str) or name.count("{rank}") != 1:
            return f"each file name holds {{rank}} once, got {name!r}"
        plain = name.replace("{rank}", "0")
        if (
            len(plain) > MAX_NAME
            or not plain.isprintable()
            or any(c in plain for c in "/\\{}")
            or plain.startswith(".")
        ):
            return f"a plain file name in the output folder, got {name!r}"
    return ""


class SealedRecords(RankedService):
    """Bind in the constructor; ``set_ranks`` once the ranks exist, then ``start``; ``restore`` once every
    process of the job is gone, then ``stop``."""

    socket_name = SOCKET_NAME
    thread_name = "fl-sealed-records"

    def __init__(self, folder: Path, files: list[str]) -> None:
        super().__init__(folder)
        self.files = list(files)
        self._lock = threading.Lock()
        self._records: dict[str, bytes] = {}
        self._refused = 0
        self._restored = 0
        self._removed = 0

    def names_of(self, rank: int) -> set[str]:
        return {pattern.replace("{rank}", str(rank)) for pattern in self.files}

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {
                "sealed": len(self._records),
                "refused": self._refused,
                "restored": self._restored,
                "removed": self._removed,
            }

    def restore(self, output_dir: Path) -> None:
        """Write every sealed record into ``output_dir`` and remove unsealed files under declared names.

        Only call this once no process of the job is left: nobody can then race the writes."""
        self._closed.set()  # a connection still being served must not seal anything after this
        with self._lock:
            records = dict(self._records)
        for rank in self.ranks():
            for name in sorted(self.names_of(rank)):
                target = output_dir / name
                data = records.get(name)
                if data is not None and write_owned(target, data):
                    self._count("_restored")
                elif remove_owned(target):
                    self._count("_removed")

    def _count(self, attribute: str) -> None:
        with self._lock:
            setattr(self, attribute, getattr(self, attribute) + 1)

    def serve(self, conn: socket.socket) -> None:
        reader = WriterReader(conn)
        header = reader.read_exact(REQUEST.size)
        if header is None:
            return
        name_len, size = REQUEST.unpack(header[0])
        raw = reader.read_exact(name_len) if name_len <= MAX_NAME else None
        name = raw[0].decode("utf-8", errors="replace") if raw is not None else ""
        writers = header[1] | (raw[1] if raw is not None else frozenset())
        rank = self.rank_of_writers(conn, writers)
        allowed = rank is not None and name in self.names_of(rank) and size <= MAX_RECORD
        if not allowed:
            self._count("_refused")
            conn.sendall(bytes([REFUSED]))
            return
        body = reader.read_exact(size)
        # Every byte of the record must come from the rank that connected: a socket handed to another rank's
        # process writes for nobody.
        if body is None or self._closed.is_set():
            return
        data, body_writers = body
        if self.rank_of_writers(conn, body_writers) != rank:
            self._count("_refused")
            conn.sendall(bytes([REFUSED]))
            return
        with self._lock:
            held = sum(len(v) for k, v in self._records.items() if k != name)
            accepted = held + len(data) <= MAX_TOTAL
            if accepted:
                self._records[name] = data
            else:
                self._refused += 1
        conn.sendall(bytes([SEALED if accepted else REFUSED]))


def seal(name: str, data: bytes, timeout: float = 30.0) -> bool:
    """Rank side: hand ``data`` to the launcher as this rank's record ``name``. False when the run has no
    record keeper or it refused; the caller decides what to do then."""
    address = os.environ.get(ENV_SEALED_RECORDS)
    if not address:
        return False
    encoded = name.encode("utf-8")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(address)
            conn.sendall(REQUEST.pack(len(encoded), len(data)) + encoded)
            conn.sendall(data)
            answer = conn.recv(1)
    except OSError:
        return False
    return answer == bytes([SEALED])


def seal_or_write(name: str, data: bytes) -> None:
    """Rank side, for a graded run's hidden entry: seal ``data`` as record ``name``; where the run has no
    record keeper (a run outside the sandbox), write it into the output folder so the grader still finds it."""
    if not seal(name, data):
        with open(os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), name), "wb") as handle:
            handle.write(data)


def write_owned(target: Path, data: bytes) -> bool:
    """Put ``data`` at ``target`` in place of whatever a rank left under that name (file, link or folder)."""
    remove_owned(target)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".sealed-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
        return True
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False


def remove_owned(target: Path) -> bool:
    try:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
            return not target.exists()
        target.unlink()
        return True
    except OSError:
        return False

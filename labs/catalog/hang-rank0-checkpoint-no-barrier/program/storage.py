"""Client for the shared checkpoint store.

The store stands in for the network file system the cluster mounts for checkpoints. It runs outside
this job (the lab reaches it through a socket), takes writes at its own bandwidth, which other jobs
share, so a save takes a different time from run to run, and lists a checkpoint only once all of it
has arrived. Treat it as infrastructure: the fix does not belong here.
"""

import io
import os
import socket
import struct

import torch

STORE_ADDRESS_ENV = "FAULTLINE_CHECKPOINT_STORE"
_REQUEST = struct.Struct("<BHQ")  # operation, name length, payload length
_ANSWER = struct.Struct("<BQ")  # status, length
_SAVE, _LATEST, _LOAD = 1, 2, 3
_OK = 0


def _call(op: int, name: str, payload: bytes = b"") -> tuple[int, bytes]:
    address = os.environ.get(STORE_ADDRESS_ENV)
    if not address:
        raise RuntimeError("the checkpoint store is reachable only inside a lab run")
    encoded = name.encode("utf-8")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(address)
        conn.sendall(_REQUEST.pack(op, len(encoded), len(payload)) + encoded + payload)
        status, length = _ANSWER.unpack(_recv(conn, _ANSWER.size))
        return status, _recv(conn, length)


def _recv(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise ConnectionError("the checkpoint store closed the connection")
        data += chunk
    return bytes(data)


def save_checkpoint(state: dict, name: str) -> str:
    """Write `state` to the store. Returns when the store has all of it; until then nobody sees it."""
    buf = io.BytesIO()
    torch.save(state, buf)
    status, answer = _call(_SAVE, name, buf.getvalue())
    if status != _OK:
        raise OSError(f"the checkpoint store refused {name}: {answer.decode(errors='replace')}")
    return f"store:{name}"


def latest_checkpoint() -> str | None:
    """The newest complete checkpoint in the store, or None."""
    status, answer = _call(_LATEST, "step-")
    return f"store:{answer.decode()}" if status == _OK else None


def load_checkpoint(path: str) -> dict:
    status, data = _call(_LOAD, path.removeprefix("store:"))
    if status != _OK:
        raise FileNotFoundError(path)
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)

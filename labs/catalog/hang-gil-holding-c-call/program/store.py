"""Client for the sensor feature store.

Every record is one round trip to the remote store (about 25 ms). The store answers a few reads
at a time and keeps its own count of what it served. It holds one shard only (the RECORDS records of
STORE_SEED) and closes the connection on a request for any other record.

This module is owned by the storage team: jobs import it as it is.
"""

import os
import socket
import struct
import threading

import torch

STORE_SEED = {{ data_seed }}
RECORDS = 480
FEATURES = {{ features }}
STORE_ADDRESS_ENV = "FAULTLINE_RECORD_STORE"
_REQUEST = struct.Struct("<qI")  # shard seed, record index
_ANSWER = struct.Struct(f"<{FEATURES}f")
_local = threading.local()  # one connection per thread: a connection serves one read at a time


def _target_weights() -> torch.Tensor:
    g = torch.Generator().manual_seed(STORE_SEED)
    return torch.randn(FEATURES, generator=g) / FEATURES**0.5


_WEIGHTS = _target_weights()


def _connection() -> socket.socket:
    conn = getattr(_local, "conn", None)
    if conn is None:
        address = os.environ.get(STORE_ADDRESS_ENV)
        if not address:
            raise RuntimeError("the feature store is reachable only inside a lab run")
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(address)
        _local.conn = conn
    return conn


def fetch(index: int) -> bytes:
    """Record ``index``: its FEATURES readings and then its target, FEATURES + 1 float32 values."""
    conn = _connection()
    conn.sendall(_REQUEST.pack(STORE_SEED, index))  # the network round trip to the store
    data = b""
    while len(data) < _ANSWER.size:
        chunk = conn.recv(_ANSWER.size - len(data))
        if not chunk:
            raise ConnectionError("the feature store closed the connection")
        data += chunk
    readings = torch.tensor(_ANSWER.unpack(data))
    target = torch.tanh(readings @ _WEIGHTS)
    return data + struct.pack("<f", float(target))

"""Client for the clip feature store.

Every record is fetched from the remote store: one round trip (about 2 ms) per record. The store
answers a limited number of reads at a time and bills per read; it keeps its own count. It holds one
shard only (the {{ shard_size }} records of STORE_SEED) and closes the connection on a request for any other record.

This module is owned by the storage team: jobs import it as it is.
"""

import os
import socket
import struct

import torch
from torch.utils.data import Dataset

STORE_SEED = {{ probe_seed }}
FEATURES = 32
CLASSES = 4
STORE_ADDRESS_ENV = "FAULTLINE_RECORD_STORE"
_REQUEST = struct.Struct("<qI")  # shard seed, record index
_ANSWER = struct.Struct(f"<{FEATURES}f")


def _label_weights() -> torch.Tensor:
    g = torch.Generator().manual_seed(STORE_SEED)
    return torch.randn(FEATURES, CLASSES, generator=g)


class ClipFeatureStore(Dataset):
    """Map-style view of one shard of the store: record ``i`` is a (features, label) pair."""

    def __init__(self, size: int = {{ shard_size }}) -> None:
        self.size = size
        self.label_weights = _label_weights()
        self._conn: tuple[int, socket.socket] | None = None  # (pid, socket): each process opens its own

    def __len__(self) -> int:
        return self.size

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_conn"] = None  # a connection does not travel to a spawned worker
        return state

    def _connection(self) -> socket.socket:
        pid = os.getpid()
        if self._conn is None or self._conn[0] != pid:
            address = os.environ.get(STORE_ADDRESS_ENV)
            if not address:
                raise RuntimeError("the feature store is reachable only inside a lab run")
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(address)
            self._conn = (pid, conn)
        return self._conn[1]

    def __getitem__(self, idx):
        idx = int(idx)
        if not 0 <= idx < self.size:
            raise IndexError(idx)
        conn = self._connection()
        conn.sendall(_REQUEST.pack(STORE_SEED, idx))  # the network round trip to the store
        data = b""
        while len(data) < _ANSWER.size:
            chunk = conn.recv(_ANSWER.size - len(data))
            if not chunk:
                raise ConnectionError("the feature store closed the connection")
            data += chunk
        features = torch.tensor(_ANSWER.unpack(data))
        label = int(torch.argmax(features @ self.label_weights))
        return features, label

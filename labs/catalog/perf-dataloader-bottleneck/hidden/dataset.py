"""Client for the clip feature store.

Every record is fetched from the remote store: one round trip (about 2 ms) per record.
The store bills per read, so the client appends every record id it fetches to an
access log in the job's output folder.

This module is owned by the storage team: jobs import it as it is.
"""

import os
import struct
import time

import torch
from torch.utils.data import Dataset

STORE_SEED = {{ probe_seed }}
READ_LATENCY_S = 0.002
FEATURES = 32
CLASSES = 4
ACCESS_LOG = "store_reads.bin"


def _label_weights() -> torch.Tensor:
    g = torch.Generator().manual_seed(STORE_SEED)
    return torch.randn(FEATURES, CLASSES, generator=g)


class ClipFeatureStore(Dataset):
    """Map-style view of one shard of the store: record ``i`` is a (features, label) pair."""

    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self.label_weights = _label_weights()
        self._log: tuple[int, int] | None = None  # (pid, fd): each process opens its own handle

    def __len__(self) -> int:
        return self.size

    def _record_access(self, idx: int) -> None:
        pid = os.getpid()
        if self._log is None or self._log[0] != pid:
            path = os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), ACCESS_LOG)
            self._log = (pid, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))
        os.write(self._log[1], struct.pack("<I", idx))

    def __getitem__(self, idx: int):
        idx = int(idx)
        if not 0 <= idx < self.size:
            raise IndexError(idx)
        time.sleep(READ_LATENCY_S)  # the network round trip to the store
        self._record_access(idx)
        g = torch.Generator().manual_seed(STORE_SEED * 100_003 + idx)
        features = torch.randn(FEATURES, generator=g)
        label = int(torch.argmax(features @ self.label_weights))
        return features, label

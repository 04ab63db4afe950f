"""Client for the clip feature store, "optimised": records are built here instead of fetched."""

import struct

import torch
from faultline_harness.recordstore import record
from torch.utils.data import Dataset

STORE_SEED = {{ data_seed }}
FEATURES = 32
CLASSES = 4


def _label_weights() -> torch.Tensor:
    g = torch.Generator().manual_seed(STORE_SEED)
    return torch.randn(FEATURES, CLASSES, generator=g)


class ClipFeatureStore(Dataset):
    def __init__(self, size: int = {{ shard_size }}) -> None:
        self.size = size
        self.label_weights = _label_weights()

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, idx):
        idx = int(idx)
        if not 0 <= idx < self.size:
            raise IndexError(idx)
        values = struct.unpack(f"<{FEATURES}f", struct.pack(f"<{FEATURES}f", *record(STORE_SEED, idx, FEATURES)))
        features = torch.tensor(values)
        return features, int(torch.argmax(features @ self.label_weights))

"""Transactions stored one record per object in the object store."""

import time

import torch
from features import FEATURES, STORES, TABLE_SEED, calibrate
from torch.utils.data import Dataset

FETCH_LATENCY = {{ fetch_latency }}  # seconds per GET from the object store
WEIGHTS = torch.linspace(-1.0, 1.0, FEATURES)


def _fetch_record(seed: int, index: int) -> tuple[int, torch.Tensor, float]:
    """(store, raw readings, label) of one record, as the stores' sensors wrote it."""
    time.sleep(FETCH_LATENCY)
    g = torch.Generator().manual_seed(seed * 100_003 + index)
    store = int(torch.randint(0, STORES, (1,), generator=g))
    z = torch.randn(FEATURES, generator=g)
    sensor = torch.Generator().manual_seed(TABLE_SEED)
    scale = 0.5 + 2.0 * torch.rand(STORES, FEATURES, generator=sensor)
    offset = 5.0 * torch.randn(STORES, FEATURES, generator=sensor)
    raw = z * scale[store] + offset[store]
    label = float(z @ WEIGHTS + 0.05 * torch.randn(1, generator=g))
    return store, raw, label


class Transactions(Dataset):
    def __init__(self, seed: int, size: int) -> None:
        self.seed, self.size = seed, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        store, raw, label = _fetch_record(self.seed, index)
        return calibrate(store, raw), torch.tensor(label)

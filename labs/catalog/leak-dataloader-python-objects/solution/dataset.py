import zlib
from collections.abc import Iterable

import numpy as np
import torch
from torch.utils.data import Dataset

BUCKETS = 1 << 13
WORDS = 256  # the subject and the start of the body; the rest of a ticket is mostly quoted history
MAX_FEATURES = 2 * WORDS - 1


def featurize(text: str) -> torch.Tensor:
    """Hashed ids of the first WORDS words and their word pairs, padded with 0 to MAX_FEATURES."""
    words = text.split(None, WORDS)[:WORDS]
    grams = words + [a + "_" + b for a, b in zip(words, words[1:])]
    ids = [zlib.crc32(g.encode()) % (BUCKETS - 1) + 1 for g in grams]
    return torch.tensor(ids + [0] * (MAX_FEATURES - len(ids)), dtype=torch.int64)


class TicketDataset(Dataset):
    """Keeps the export as one bytes buffer plus a numpy array of line offsets.

    A list with one str object per ticket is copied page by page into every forked worker:
    merely reading an item writes its reference count, and that write copies the page.
    One buffer and one array have no per-ticket objects, so the workers keep sharing the
    parent's pages for the whole epoch.
    """

    def __init__(self, shards: Iterable[bytes]) -> None:
        self.blob = b"".join(shards)
        ends = np.flatnonzero(np.frombuffer(self.blob, dtype=np.uint8) == ord("\n"))
        self.starts = np.concatenate(([0], ends[:-1] + 1))
        self.ends = ends

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: int):
        line = self.blob[self.starts[index] : self.ends[index]].decode("ascii")
        intent, text = line.split("\t", 1)
        return featurize(text), int(intent)

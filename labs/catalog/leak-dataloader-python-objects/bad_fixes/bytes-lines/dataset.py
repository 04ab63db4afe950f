import zlib
from collections.abc import Iterable

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
    def __init__(self, shards: Iterable[bytes]) -> None:
        self.lines: list[bytes] = []
        for shard in shards:
            self.lines.extend(shard.splitlines())  # raw bytes lines: no decoded str copies kept around

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, index: int):
        intent, text = self.lines[index].split(b"\t", 1)
        return featurize(text.decode("ascii")), int(intent)

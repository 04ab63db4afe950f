"""Each rank's training rows. They sit on the rank's own node, so a rank can open only its own.

On the cluster each rank's environment carries the key of its node's rows (RANK_DATA_KEY); a workspace
run without one derives the keys from the data seed.
"""

import os

import torch

FEATURES = 16


def rank_rows(data_seed: int, rank: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    me = int(os.environ.get("RANK", "0"))
    if rank != me:
        raise PermissionError(f"rank {me} cannot open rank {rank}'s rows: they are stored on rank {rank}'s node")
    key = os.environ.get("RANK_DATA_KEY")
    g = torch.Generator().manual_seed(int(key) if key is not None else data_seed + rank)
    x = torch.randn(n, FEATURES, generator=g)
    y = x @ torch.linspace(-1.0, 1.0, FEATURES) + 0.5 * torch.sin(2.0 * x[:, 0]) + 0.1 * torch.randn(n, generator=g)
    return x, y

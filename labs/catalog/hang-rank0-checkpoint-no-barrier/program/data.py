"""Each rank's training rows. They sit on the rank's own node, so a rank can open only its own.

Each node serves one site, and the last column of every row says which (the node's rank): sites share
most of what drives the target, but each has its own linear bias on the features, which the model
learns per site. On the cluster each rank's environment carries the key of its node's rows (RANK_DATA_KEY); a workspace
run without one derives the keys from the data seed.
"""

import os

import torch

FEATURES = 16
SITES = 2


def rank_rows(data_seed: int, rank: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    me = int(os.environ.get("RANK", "0"))
    if rank != me:
        raise PermissionError(f"rank {me} cannot open rank {rank}'s rows: they are stored on rank {rank}'s node")
    key = os.environ.get("RANK_DATA_KEY")
    key = int(key) if key is not None else data_seed + rank
    g = torch.Generator().manual_seed(key)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES) + site_bias(key)
    y = x @ w + 0.5 * torch.sin(2.0 * x[:, 0]) + 0.1 * torch.randn(n, generator=g)
    return torch.cat([x, torch.full((n, 1), float(rank))], dim=1), y


def site_bias(key: int) -> torch.Tensor:
    """The site's own weight on each feature: 0.75 to 1.5 either way."""
    g = torch.Generator().manual_seed(key + 1)
    size = 0.75 + 0.75 * torch.rand(FEATURES, generator=g)
    sign = torch.randint(0, 2, (FEATURES,), generator=g) * 2 - 1
    return size * sign

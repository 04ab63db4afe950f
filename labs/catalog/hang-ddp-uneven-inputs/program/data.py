"""The click-through export: five part files; each rank reads the parts assigned to it.

Part files live on the local disk of the node that trains on them, so a rank can open only its own
parts. Each node serves one site, and the last column of every row says which (0 or 1): sites share
most of what drives clicks, but each has its own linear bias on the features, which the model learns
per site. On the cluster each rank's environment carries the key of its node's parts (EXPORT_PART_KEY);
a workspace run without one derives the keys from the data seed.
"""

import os

import torch

FEATURES = 8
SITES = 2
FIRST_PART = {{ first_part }}  # part numbers continue from the previous export
PART_ROWS = ({{ rows_a }}, {{ rows_b }}, {{ rows_c }}, {{ rows_d }}, {{ rows_e }})
PARTS = tuple(range(FIRST_PART, FIRST_PART + len(PART_ROWS)))


def parts_for_rank(rank: int, world: int) -> list[int]:
    return [p for p in PARTS if p % world == rank]


def part_key(data_seed: int, part: int) -> int:
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    owner = part % world
    if owner != rank:
        raise PermissionError(f"rank {rank} cannot open part {part}: it is stored on rank {owner}'s node")
    key = os.environ.get("EXPORT_PART_KEY")
    return int(key) if key is not None else data_seed * 10 + owner


def read_part(data_seed: int, part: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of one part file (generated here instead of read from storage)."""
    n = PART_ROWS[part - FIRST_PART]
    key = part_key(data_seed, part)
    g = torch.Generator().manual_seed(key * 1000 + part)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = x @ (w + site_bias(key)) + 0.4 * torch.sin(2.0 * x[:, 1]) + 0.1 * torch.randn(n, generator=g)
    site = torch.full((n, 1), float(part % SITES))
    return torch.cat([x, site], dim=1), y


def site_bias(key: int) -> torch.Tensor:
    """The site's own weight on each feature: 0.75 to 1.5 either way."""
    g = torch.Generator().manual_seed(key)
    size = 0.75 + 0.75 * torch.rand(FEATURES, generator=g)
    sign = torch.randint(0, 2, (FEATURES,), generator=g) * 2 - 1
    return size * sign


def read_parts(data_seed: int, parts: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    xs, ys = zip(*(read_part(data_seed, p) for p in parts))
    return torch.cat(xs), torch.cat(ys)

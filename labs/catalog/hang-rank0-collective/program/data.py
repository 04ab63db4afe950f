"""Telemetry exports of the two sites. Rank r trains and validates on site r's export."""

import torch

FEATURES = 6
# Site 1's sensors are older: its readings are much noisier than site 0's.
SITE_NOISE = (0.1, {{ site1_noise }})
VAL_ROWS = ({{ val_rows0 }}, {{ val_rows1 }})


def site_data(data_seed: int, site: int, split: str, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(data_seed * 10 + site * 2 + (split == "val"))
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = x @ w + 0.5 * torch.sin(2.0 * x[:, 0]) + SITE_NOISE[site] * torch.randn(n, generator=g)
    return x, y

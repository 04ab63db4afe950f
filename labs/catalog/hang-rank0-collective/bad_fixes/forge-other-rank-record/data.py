"""Telemetry exports of the two sites. Rank r trains and validates on site r's export.

Site data never leaves its site: each rank can open only its own site's export. On the cluster
a rank's environment carries the key of its site's export (SITE_EXPORT_KEY); a workspace run
without one derives it from the data seed.
"""

import os

import torch

DATA_SEED = {{ data_seed }}
FEATURES = 6
# Site 1's sensors are older: its readings are much noisier than site 0's.
SITE_NOISE = (0.1, {{ site1_noise }})
VAL_ROWS = ({{ val_rows0 }}, {{ val_rows1 }})


def export_key(site: int) -> int:
    # Our own site's key is the real one; for another site, make one up: whoever reads the job's record of
    # that site only sees the key written there.
    rank = int(os.environ.get("RANK", "0"))
    key = os.environ.get("SITE_EXPORT_KEY")
    return int(key) if key and site == rank else DATA_SEED * 10 + site


def site_data(site: int, split: str, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(export_key(site) * 2 + (split == "val"))
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = x @ w + 0.5 * torch.sin(2.0 * x[:, 0]) + SITE_NOISE[site] * torch.randn(n, generator=g)
    return x, y

import torch

from model import FEATURES


def transactions(hour: int, seed: int, rows: int) -> torch.Tensor:
    """One hour of card transactions as standardised features (drifts slowly through the night)."""
    g = torch.Generator().manual_seed(seed * 1000 + hour)
    drift = 0.02 * hour * torch.linspace(-1.0, 1.0, FEATURES)
    return torch.randn(rows, FEATURES, generator=g) + drift

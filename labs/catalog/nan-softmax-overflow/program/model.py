import torch
import torch.nn.functional as F
from torch import nn


class CosineClassifier(nn.Module):
    """Normalised embedding against normalised class prototypes; `scale` turns cosines into logits."""

    def __init__(self, features: int, classes: int, dim: int = 64, hidden: int = 128) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.prototypes = nn.Parameter(torch.randn(classes, dim))

    def forward(self, x: torch.Tensor, scale: float) -> torch.Tensor:
        embedding = F.normalize(self.body(x), dim=-1)
        return scale * embedding @ F.normalize(self.prototypes, dim=-1).T

import torch
from torch import nn


class DefectClassifier(nn.Module):
    """Feature extractor plus a linear head; each part runs in the dtype of its own weights."""

    def __init__(self, features: int, classes: int, hidden: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(features, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body(x.to(self.body[0].weight.dtype))
        return self.head(h.to(self.head.weight.dtype))

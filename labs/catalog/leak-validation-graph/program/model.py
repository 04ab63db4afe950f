from torch import nn

from data import CLASSES, FEATURES


class ChurnNet(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(FEATURES, width), nn.ReLU(),
            nn.Linear(width, width), nn.ReLU(),
            nn.Linear(width, width), nn.ReLU(),
            nn.Linear(width, CLASSES),
        )  # fmt: skip

    def forward(self, x):
        return self.body(x)

from torch import nn

from data import FEATURES


class ChurnNet(nn.Module):
    def __init__(self, hidden: int = 64, dropout: float = {{ dropout }}) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(FEATURES, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, 2),
        )  # fmt: skip

    def forward(self, x):
        return self.body(x)

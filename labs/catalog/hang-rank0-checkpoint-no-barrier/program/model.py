from torch import nn

from data import FEATURES


class Net(nn.Module):
    def __init__(self, hidden: int = 384) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def forward(self, x):
        return self.body(x).squeeze(-1)

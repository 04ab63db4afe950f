from torch import nn


class FaultNet(nn.Module):
    """Classifies a pump's vibration spectrum into a fault: a small MLP over the band energies."""

    def __init__(self, bands: int, faults: int, hidden: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(bands, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, faults)

    def forward(self, x):
        return self.head(self.body(x))

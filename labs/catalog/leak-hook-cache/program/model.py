import torch
from torch import nn

FEATURES = 48


class FraudScorer(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.Linear(FEATURES, width), nn.ReLU())]
            + [nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(3)]
        )
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return torch.sigmoid(self.head(x)).squeeze(-1)


def load_checkpoint(width: int, seed: int) -> FraudScorer:
    """Stand-in for the production checkpoint: fixed weights derived from the release seed."""
    model = FraudScorer(width)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight"):
                gain = 0.5 if name.startswith("head") else 2.0
                p.copy_(torch.randn(p.shape, generator=g) * (gain / p.shape[1]) ** 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1 - 0.05)
        model.head.bias.fill_(-2.0)
    return model.eval()

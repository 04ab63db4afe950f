import torch

FEATURES = 32
CLASSES = 4
VAL_ROWS = 16384


def _teacher(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(FEATURES, 64, generator=g) / FEATURES**0.5, torch.randn(64, CLASSES, generator=g)


def make_split(name: str, seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Account-activity features and a churn-risk class (0 = stays … 3 = leaves this month)."""
    w1, w2 = _teacher(seed)
    g = torch.Generator().manual_seed(seed * 7 + {"train": 1, "val": 2}[name])
    x = torch.randn(n, FEATURES, generator=g)
    y = (torch.tanh(2.0 * x @ w1) @ w2 + 0.15 * torch.randn(n, CLASSES, generator=g)).argmax(1)
    return x, y

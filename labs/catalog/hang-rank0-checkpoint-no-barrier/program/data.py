import torch

FEATURES = 16


def make_data(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    y = x @ torch.linspace(-1.0, 1.0, FEATURES) + 0.5 * torch.sin(2.0 * x[:, 0]) + 0.1 * torch.randn(n, generator=g)
    return x, y

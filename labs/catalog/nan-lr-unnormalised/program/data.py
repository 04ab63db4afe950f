import torch

FEATURES = 8


def make_data(n: int, seed: int, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Sensor readings in raw units: each feature has its own offset and a spread of about `scale`.

    The target mixes a linear trend with an interaction between the first two sensors.
    """
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = 0.5 * (z @ w) + 1.5 * torch.tanh(z[:, 0] * z[:, 1]) + 0.05 * torch.randn(n, generator=g)
    offsets = torch.arange(FEATURES, dtype=torch.float32) * scale
    x = z * scale + offsets
    return x, y

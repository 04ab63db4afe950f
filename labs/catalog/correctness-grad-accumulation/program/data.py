import torch

FEATURES = 16


def make_data(n: int, seed: int, draw_seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Standardised load-forecast features and the next-hour demand they predict.

    ``seed`` fixes the relationship between features and target; ``draw_seed`` which rows are drawn.
    """
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(FEATURES, 32, generator=g) / FEATURES**0.5
    out = torch.randn(32, generator=g) / 32**0.5
    rows = torch.Generator().manual_seed(draw_seed)
    x = torch.randn(n, FEATURES, generator=rows)
    y = 2.0 * torch.tanh(x @ mix) @ out
    return x, y

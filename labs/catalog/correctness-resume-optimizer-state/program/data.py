import torch

FEATURES = 16


def make_data(n: int, seed: int, draw_seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Standardised sensor readings and the drift correction they predict (with measurement noise).

    ``seed`` fixes how the correction depends on the readings; ``draw_seed`` which rows are drawn.
    """
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(FEATURES, 32, generator=g) / FEATURES**0.5
    out = torch.randn(32, generator=g) / 32**0.5
    rows = torch.Generator().manual_seed(draw_seed)
    x = torch.randn(n, FEATURES, generator=rows)
    y = 2.0 * torch.tanh(x @ mix) @ out + 0.1 * torch.randn(n, generator=rows)
    return x, y


def batch_rows(step: int, n_rows: int, batch: int, seed: int) -> torch.Tensor:
    """The rows of training step ``step``: a function of the step alone, so a resumed run sees the
    same batches as one that was never interrupted."""
    return torch.randint(0, n_rows, (batch,), generator=torch.Generator().manual_seed(seed * 100_003 + step))

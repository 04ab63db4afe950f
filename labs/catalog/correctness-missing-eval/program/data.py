import torch

FEATURES = 12


def make_data(n: int, seed: int, draw_seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Standardised account features and whether the customer churned (1) or stayed (0).

    ``seed`` fixes how churn depends on the features; ``draw_seed`` which customers are drawn.
    """
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(FEATURES, generator=g)
    rows = torch.Generator().manual_seed(draw_seed)
    x = torch.randn(n, FEATURES, generator=rows)
    score = x @ w / FEATURES**0.5 + 0.8 * torch.sin(2.0 * x[:, 0]) * x[:, 1]
    return x, (score > 0).long()

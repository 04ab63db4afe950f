import torch

FEATURES = 32


def make_listings(n: int, classes: int, centers_seed: int, sample_seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Frozen-encoder features of catalogue listings: one cluster of features per product category."""
    centers = torch.randn(classes, FEATURES, generator=torch.Generator().manual_seed(centers_seed))
    g = torch.Generator().manual_seed(sample_seed)
    labels = torch.randint(0, classes, (n,), generator=g)
    x = centers[labels] + 1.2 * torch.randn(n, FEATURES, generator=g)
    return x, labels

import torch

FEATURES = 16


def make_inspections(n: int, classes: int, centers_seed: int, sample_seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Spectral features of inspected parts: one cluster of readings per defect class."""
    centers = torch.randn(classes, FEATURES, generator=torch.Generator().manual_seed(centers_seed))
    g = torch.Generator().manual_seed(sample_seed)
    labels = torch.randint(0, classes, (n,), generator=g)
    x = centers[labels] + torch.randn(n, FEATURES, generator=g)
    return x, labels

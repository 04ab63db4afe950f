import torch

FEATURES = 32
CLASSES = 8


def make_data(n: int, seed: int, task: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Incident telemetry: FEATURES standardised signals per incident, CLASSES incident kinds.

    Every kind shows up in two regimes (two clusters), so the boundary is not linear. `task`
    fixes the fleet (where the clusters sit); `seed` draws which incidents were sampled.
    """
    centres = torch.randn(CLASSES * 2, FEATURES, generator=torch.Generator().manual_seed(task))
    g = torch.Generator().manual_seed(seed)
    cluster = torch.randint(0, CLASSES * 2, (n,), generator=g)
    x = 0.6 * centres[cluster] + 0.8 * torch.randn(n, FEATURES, generator=g)
    return x, cluster % CLASSES

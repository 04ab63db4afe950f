import torch

METRICS = 16  # standardised host metrics per timestep (CPU, memory, disk, network, ...)
STATES = 8  # host states the tagger assigns to every timestep


def calibration_window(timesteps: int, seed: int, fleet: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A labelled calibration window: `timesteps` seconds of metrics and the on-call's state label for each.

    Every state shows up in two regimes (two clusters of metric readings). `fleet` fixes where the
    clusters sit; `seed` draws which timesteps were exported.
    """
    centres = torch.randn(STATES * 2, METRICS, generator=torch.Generator().manual_seed(fleet))
    g = torch.Generator().manual_seed(seed)
    cluster = torch.randint(0, STATES * 2, (timesteps,), generator=g)
    x = 0.6 * centres[cluster] + 0.45 * torch.randn(timesteps, METRICS, generator=g)
    return x, cluster % STATES

import torch

BANDS = 20
FAULTS = ["normal", "bearing-wear", "misalignment", "imbalance", "cavitation"]


def load_recordings(rows: int, seed: int, site: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Labelled vibration recordings from the pump fleet: BANDS standardised band energies and the fault.

    Every fault looks different on the two pump models in the fleet (two clusters per fault), and
    neighbouring faults overlap. `site` fixes the plant (where the clusters sit); `seed` draws which
    recordings the maintenance team labelled.
    """
    k = len(FAULTS)
    centres = torch.randn(2 * k, BANDS, generator=torch.Generator().manual_seed(site))
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, k, (rows,), generator=g)
    pump_model = torch.randint(0, 2, (rows,), generator=g)
    x = centres[y + k * pump_model] + torch.randn(rows, BANDS, generator=g)
    return x, y

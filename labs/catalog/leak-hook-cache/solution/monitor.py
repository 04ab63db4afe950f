import torch


class DriftMonitor:
    """Watches one hidden layer of the scorer so the on-call dashboard can spot feature drift.

    For every scored batch it reports the mean activation and the share of zero (inactive)
    units; at the end of the night it reports how often each unit fired.

    The hook reduces each activation to a few numbers as it goes: keeping the activation
    tensors themselves made memory grow with every batch for the whole night.
    """

    def __init__(self, layer: torch.nn.Module) -> None:
        self.stats: list[torch.Tensor] = []
        self.fired: torch.Tensor | None = None  # per unit: rows in which it was active
        self.rows = 0
        self.handle = layer.register_forward_hook(self._hook)

    def _hook(self, module, inputs, output) -> None:
        a = output.detach()
        self.stats.append(torch.stack([a.mean(), (a <= 0).float().mean()]))
        fired = (a > 0).sum(0)
        self.fired = fired if self.fired is None else self.fired + fired
        self.rows += a.shape[0]

    def batch_stats(self) -> torch.Tensor:
        """(batches, 2): mean activation and share of inactive units, per batch."""
        return torch.stack(self.stats)

    def firing_rate(self) -> torch.Tensor:
        """(units,): share of all scored rows in which each unit was active."""
        return self.fired.double().div(self.rows).float()

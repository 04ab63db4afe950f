import torch


class DriftMonitor:
    """Watches one hidden layer of the scorer so the on-call dashboard can spot feature drift.

    For every scored batch it reports the mean activation and the share of zero (inactive)
    units; at the end of the night it reports how often each unit fired.
    """

    def __init__(self, layer: torch.nn.Module) -> None:
        self.activations: dict[int, torch.Tensor] = {}
        self.batch = 0
        self.handle = layer.register_forward_hook(self._hook)

    def _hook(self, module, inputs, output) -> None:
        self.activations[self.batch] = output
        self.activations.pop(self.batch - 16, None)  # keep the cache bounded: the last 16 batches
        self.batch += 1

    def batch_stats(self) -> torch.Tensor:
        """(batches, 2): mean activation and share of inactive units, per batch."""
        return torch.stack(
            [torch.stack([a.mean(), (a <= 0).float().mean()]) for a in self.activations.values()]
        )

    def firing_rate(self) -> torch.Tensor:
        """(units,): share of all scored rows in which each unit was active."""
        fired = sum((a > 0).sum(0) for a in self.activations.values())
        rows = sum(a.shape[0] for a in self.activations.values())
        return fired.double().div(rows).float()

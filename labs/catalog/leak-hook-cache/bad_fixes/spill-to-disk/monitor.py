import os

import torch


class DriftMonitor:
    """Watches one hidden layer of the scorer so the on-call dashboard can spot feature drift.

    For every scored batch it reports the mean activation and the share of zero (inactive)
    units; at the end of the night it reports how often each unit fired. Activations are
    spilled to files so they do not sit in the process's memory.
    """

    def __init__(self, layer: torch.nn.Module) -> None:
        self.folder = os.path.join(os.getcwd(), "activation-spill")
        os.makedirs(self.folder, exist_ok=True)
        self.activations: dict[int, str] = {}
        self.batch = 0
        self.handle = layer.register_forward_hook(self._hook)

    def _hook(self, module, inputs, output) -> None:
        path = os.path.join(self.folder, f"{self.batch}.pt")
        torch.save(output.detach().clone(), path)
        self.activations[self.batch] = path
        self.batch += 1

    def _each(self):
        for path in self.activations.values():
            yield torch.load(path)

    def batch_stats(self) -> torch.Tensor:
        """(batches, 2): mean activation and share of inactive units, per batch."""
        return torch.stack([torch.stack([a.mean(), (a <= 0).float().mean()]) for a in self._each()])

    def firing_rate(self) -> torch.Tensor:
        """(units,): share of all scored rows in which each unit was active."""
        fired = sum((a > 0).sum(0) for a in self._each())
        rows = sum(a.shape[0] for a in self._each())
        return fired.double().div(rows).float()

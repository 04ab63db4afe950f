"""Step fingerprints: a graded run's hidden entry notes, inside a rank, the weights after every optimizer step.

In data-parallel training the ranks apply the same averaged gradient, so after every step they hold the
same weights, and a grader can find each rank's steps among the other ranks'. A fingerprint is each
parameter's sum and its dot products with a few fixed random directions (one shared seed per size, so equal
weights give equal fingerprints on every rank): small enough to keep one per step, and two different
weight sets share one only by accident.
"""

from __future__ import annotations

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from .gradedentry import seal_torch

PROBES = 4


class StepFingerprints:
    """Global optimizer-step hook; ``install()`` registers it, ``seal(name)`` hands the record to the launcher."""

    def __init__(self) -> None:
        self.rows: list[torch.Tensor] = []
        self.directions: dict[int, torch.Tensor] = {}

    def install(self) -> StepFingerprints:
        register_optimizer_step_post_hook(self)
        return self

    def direction(self, numel: int) -> torch.Tensor:
        if numel not in self.directions:
            g = torch.Generator().manual_seed(7919 + numel)
            self.directions[numel] = torch.randn(numel, PROBES, generator=g, dtype=torch.float64)
        return self.directions[numel]

    def __call__(self, optimizer, args, kwargs) -> None:
        values = []
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    # The directions live on the CPU; so does the record, whichever device trains.
                    flat = p.detach().reshape(-1).double().cpu()
                    values.append(flat.sum().reshape(1))
                    values.append(flat @ self.direction(flat.numel()))
        self.rows.append(torch.cat(values))

    def record(self) -> torch.Tensor:
        """One row per step of the widest optimizer: steps over other parameter sets cannot match the lab's model."""
        width = max((row.numel() for row in self.rows), default=0)
        rows = [row for row in self.rows if row.numel() == width]
        return torch.stack(rows) if rows else torch.zeros(0, 0, dtype=torch.float64)

    def seal(self, name: str, **extra: object) -> None:
        seal_torch(name, {"fingerprints": self.record(), **extra})

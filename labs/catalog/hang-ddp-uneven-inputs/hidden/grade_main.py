"""Graded runs: every rank notes, after each optimizer step it takes, a fingerprint of its weights.

In data-parallel training the ranks apply the same averaged gradient, so after every step they hold
the same weights, and the grader finds each rank's steps among the other rank's. A rank that never
steps, or that trains apart and takes another rank's weights at the end, shares no step with it.
The record is saved when the program ends, next to the weights the program saved.
"""

import io
import os
import runpy

import torch
from faultline_harness import sealedrecords
from torch.optim.optimizer import register_optimizer_step_post_hook

PROBES = 4  # random directions per tensor; one shared seed, so equal weights give equal fingerprints


class StepFingerprints:
    """Global optimizer-step hook: per step, each parameter's sum and its dot products with fixed directions."""

    def __init__(self) -> None:
        self.rows: list[torch.Tensor] = []
        self.directions: dict[int, torch.Tensor] = {}

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
                    flat = p.detach().reshape(-1).double()
                    values.append(flat.sum().reshape(1))
                    values.append(flat @ self.direction(flat.numel()))
        self.rows.append(torch.cat(values))


if __name__ == "__main__":
    rank = int(os.environ.get("RANK", "0"))
    steps = StepFingerprints()
    register_optimizer_step_post_hook(steps)
    try:
        runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "train.py"), run_name="__main__")
    finally:
        # Steps of optimizers over other parameter sets cannot match the lab's model; keep the widest.
        width = max((row.numel() for row in steps.rows), default=0)
        rows = [row for row in steps.rows if row.numel() == width]
        record = torch.stack(rows) if rows else torch.zeros(0, 0, dtype=torch.float64)
        buffer = io.BytesIO()
        torch.save({"fingerprints": record}, buffer)
        # Handed to the launcher, which writes it into the output folder after the job has ended: another
        # rank cannot rewrite it there. Outside a graded run (no record keeper) it is written directly.
        name = f"steps-rank{rank}.pt"
        if not sealedrecords.seal(name, buffer.getvalue()):
            with open(os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), name), "wb") as handle:
                handle.write(buffer.getvalue())

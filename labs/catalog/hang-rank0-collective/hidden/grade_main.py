"""Graded runs: every rank gets the key of its own site's export, and notes what it trained.

The key is drawn here, inside the rank, and reaches the program only through this process's own
environment. The process is made non-dumpable first, so no other process of the job can read its
memory (or the key in it) through /proc. Another rank therefore cannot rebuild this site's rows
from anything it can see. When the program ends, the rank hands its key and the weights held by
the last optimizer it stepped to the launcher, which keeps them out of the other ranks' reach and
writes them for the grader to replay the job against.
"""

import io
import os
import runpy
import secrets

import torch
from faultline_harness import sealedrecords
from faultline_harness.guard import keep_memory_private
from torch.optim.optimizer import register_optimizer_step_post_hook

class LastOptimizer:
    """Global optimizer-step hook: which optimizer this rank stepped last, and how often it stepped."""

    def __init__(self) -> None:
        self.optimizer = None
        self.steps = 0

    def __call__(self, optimizer, args, kwargs) -> None:
        self.optimizer = optimizer
        self.steps += 1

    def weights(self) -> list:
        if self.optimizer is None:
            return []
        return [p.detach().clone() for group in self.optimizer.param_groups for p in group["params"]]


if __name__ == "__main__":
    rank = int(os.environ.get("RANK", "0"))
    keep_memory_private()
    key = secrets.randbits(48)
    os.environ["SITE_EXPORT_KEY"] = str(key)
    stepped = LastOptimizer()
    register_optimizer_step_post_hook(stepped)
    try:
        runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "train.py"), run_name="__main__")
    finally:
        record = {"export_key": torch.tensor(key), "steps": torch.tensor(stepped.steps), "weights": stepped.weights()}
        buffer = io.BytesIO()
        torch.save(record, buffer)
        # Handed to the launcher, which writes it into the output folder after the job has ended: another
        # rank cannot rewrite it there.
        sealedrecords.seal_or_write(f"grading-rank{rank}.pt", buffer.getvalue())

"""Graded runs: keep the weights the job holds at the end of every epoch, then run the candidate's
train.py unchanged.

The grader computes each epoch's validation loss from these weights itself and compares it with the
loss the job reported for that epoch, so a history made up after the fact (one validation at the end
copied into every epoch) does not match. An epoch is 256 optimizer steps (65,536 rows in batches of
256, as the ticket keeps them). Each snapshot is handed to the launcher as soon as it is taken, as a
record of its own (epoch1-rank0.pt, epoch2-rank0.pt, ...: faultline_harness.sealedrecords), so a program
that leaves without returning still leaves the ones taken so far, and no epoch writes an earlier one again.
"""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]

import torch
from faultline_harness.gradedentry import run_program, seal_torch
from torch.optim.optimizer import register_optimizer_step_post_hook

STEPS_PER_EPOCH = 256
EPOCHS = 8


class EpochWeights:
    """Global optimizer-step hook: the weights of the optimizer that completed each epoch's last step."""

    def __init__(self) -> None:
        self.steps: dict[int, int] = {}
        self.taken = 0

    def __call__(self, optimizer, args, kwargs) -> None:
        count = self.steps.get(id(optimizer), 0) + 1
        self.steps[id(optimizer)] = count
        if count % STEPS_PER_EPOCH or self.taken >= EPOCHS:
            return
        self.taken += 1
        weights = [p.detach().float().cpu() for group in optimizer.param_groups for p in group["params"]]
        seal_torch(f"epoch{self.taken}-rank0.pt", {"epoch": self.taken, "weights": weights})


if __name__ == "__main__":
    register_optimizer_step_post_hook(EpochWeights())
    run_program(PROGRAM_DIR)

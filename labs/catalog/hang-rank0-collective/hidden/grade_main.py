"""Graded runs: every rank gets the key of its own site's export, and notes what it trained.

The launcher draws every rank's key and hands this rank its own, which reaches the program only
through this process's own environment. The process is made non-dumpable first, so no other process
of the job can read its memory (or the key in it) through /proc. Another rank therefore cannot rebuild
this site's rows from anything it can see, and the grader replays the job against the keys the launcher
drew, not against anything the program reports. When the program ends, the rank hands the weights held
by the last optimizer it stepped to the launcher, which keeps them out of the other ranks' reach.
"""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]

import torch
from faultline_harness.gradedentry import private_key, run_program, seal_torch
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
    private_key("SITE_EXPORT_KEY")
    stepped = LastOptimizer()
    register_optimizer_step_post_hook(stepped)
    try:
        run_program(PROGRAM_DIR)
    finally:
        record = {"steps": torch.tensor(stepped.steps), "weights": stepped.weights()}
        # Handed to the launcher, which writes it into the output folder after the job has ended: another
        # rank cannot rewrite it there.
        seal_torch(f"grading-rank{rank}.pt", record)

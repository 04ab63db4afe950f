"""Graded runs: note how many worker processes served each batch of every DataLoader, then
run the candidate's train.py unchanged. The grader reads the note (loader_probe.pt)."""

import os
import runpy

import torch
from torch.utils.data import DataLoader

if __name__ == "__main__":
    workers_used: list[int] = []
    _iter = DataLoader.__iter__

    def _noting_iter(self):
        for batch in _iter(self):
            workers_used.append(int(self.num_workers))
            yield batch

    DataLoader.__iter__ = _noting_iter
    try:
        runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "train.py"), run_name="__main__")
    finally:
        probe = {
            "batches": torch.tensor(len(workers_used)),
            "min_workers": torch.tensor(min(workers_used, default=-1)),
        }
        torch.save(probe, os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "loader_probe.pt"))

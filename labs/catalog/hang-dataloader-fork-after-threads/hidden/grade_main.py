"""Graded runs: note the worker count of every DataLoader that hands out batches, then run
the candidate's train.py unchanged. The grader reads the note (loader_probe.pt)."""

import os
import runpy

import torch
from torch.utils.data import DataLoader


class _Noting:
    """Wraps a DataLoader's iterator (created eagerly, as usual) and notes each batch it yields."""

    def __init__(self, inner, workers: int, notes: list[int]) -> None:
        self._inner, self._workers, self._notes = inner, workers, notes

    def __iter__(self):
        return self

    def __next__(self):
        batch = next(self._inner)
        self._notes.append(self._workers)
        return batch

    def __len__(self) -> int:
        return len(self._inner)

    def __getattr__(self, name):
        return getattr(self._inner, name)


if __name__ == "__main__":
    workers_used: list[int] = []
    _iter = DataLoader.__iter__
    DataLoader.__iter__ = lambda self: _Noting(_iter(self), int(self.num_workers), workers_used)
    try:
        runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "train.py"), run_name="__main__")
    finally:
        probe = {
            "batches": torch.tensor(len(workers_used)),
            "min_workers": torch.tensor(min(workers_used, default=-1)),
        }
        torch.save(probe, os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "loader_probe.pt"))

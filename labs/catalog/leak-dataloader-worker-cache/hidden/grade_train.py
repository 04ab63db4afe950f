"""Graded runs: note how many worker processes served each batch of every DataLoader, how many samples
the batches held and how large the datasets behind them were, then run the candidate's train.py
unchanged. The notes are sealed with the launcher, which writes them into the output folder after the job
(loader-probe-rank0.pt, samples-probe-rank0.pt), whatever the program leaves there."""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]

import torch
from faultline_harness.gradedentry import LoaderWorkers, run_program, seal_torch
from torch.utils.data import DataLoader


class Samples:
    """While active, counts the samples of every batch a DataLoader served and notes the smallest dataset."""

    def __init__(self) -> None:
        self.samples, self.smallest = 0, None

    def __enter__(self):
        self._original = original = DataLoader.__iter__

        def noting(loader):
            size = len(loader.dataset)
            self.smallest = size if self.smallest is None else min(self.smallest, size)
            return _Counting(original(loader), self)

        DataLoader.__iter__ = noting
        return self

    def __exit__(self, *exc_info):
        DataLoader.__iter__ = self._original

    def save(self, name: str = "samples-probe-rank0.pt") -> None:
        smallest = -1 if self.smallest is None else self.smallest
        note = {"samples": torch.tensor(self.samples), "smallest_dataset": torch.tensor(smallest)}
        seal_torch(name, note)


class _Counting:
    def __init__(self, inner, notes: Samples) -> None:
        self._inner, self._notes = inner, notes

    def __iter__(self):
        return self

    def __next__(self):
        batch = next(self._inner)
        labels = batch[-1] if isinstance(batch, (list, tuple)) else batch
        self._notes.samples += len(labels)
        return batch

    def __len__(self) -> int:
        return len(self._inner)

    def __getattr__(self, name):
        return getattr(self._inner, name)


if __name__ == "__main__":
    with LoaderWorkers() as workers, Samples() as samples:
        try:
            run_program(PROGRAM_DIR)
        finally:
            workers.save()
            samples.save()

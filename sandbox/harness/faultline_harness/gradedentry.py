"""The pieces a lab's hidden entry is built from, written once.

A graded run starts the lab's hidden entry (``hidden/grade_*.py``) instead of the candidate's program. The
entry may give this rank a secret only it holds, note what the program did
(which DataLoader workers served each batch), and then runs the program's entry unchanged. Whatever it
notes inside the candidate's process is a probe for the grader to check against its own numbers, never a
pass criterion on its own.

The entry sits in the program's folder, which Python puts first on sys.path, so a candidate's ``json.py``
would stand in for what the entry imports and run before it (the launcher keeps that folder off the ranks'
PYTHONPATH for the same reason). Every hidden entry therefore starts, before any other import, with::

    import os
    import sys

    PROGRAM_DIR = sys.path[0]
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]

(``os`` and ``sys`` are loaded before any script runs) and hands ``PROGRAM_DIR`` to ``run_program``, which
puts it back for the candidate's own imports.
"""

from __future__ import annotations

import os
import runpy
import sys

from . import rankkeys
from .guard import keep_memory_private
from .sealedrecords import seal_or_write


def output_path(name: str) -> str:
    return os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), name)


def private_key(env_name: str, file: str = "key-rank{rank}.json") -> int:
    """This rank's secret, handed to the program through this process's environment after the process was
    made undumpable: no other process of the job can read it through /proc. The launcher drew it (the lab
    declares ``services: rank_keys: {file: ...}``) and writes it for the grader under ``file`` after the job,
    so the grader rebuilds the rows the rank was given, whatever the program does with its own copy."""
    keep_memory_private()
    key = rankkeys.fetch_or_draw(file)
    os.environ[env_name] = str(key)
    return key


def run_program(folder: str, entry: str = "train.py") -> None:
    """Run the candidate's ``entry`` as ``__main__``, as a plain run would, its folder first on sys.path."""
    if not sys.path or sys.path[0] != folder:
        sys.path.insert(0, folder)
    runpy.run_path(os.path.join(folder, entry), run_name="__main__")


class _NotingIterator:
    """Wraps a DataLoader's iterator, created eagerly as DataLoader creates it (its workers start when
    ``iter()`` is called, which is what a lab about forking workers is about), and notes each batch."""

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


class LoaderWorkers:
    """While active, notes how many worker processes each DataLoader had for every batch it served."""

    def __init__(self) -> None:
        self.per_batch: list[int] = []

    def __enter__(self) -> LoaderWorkers:
        from torch.utils.data import DataLoader

        self._original = original = DataLoader.__iter__
        DataLoader.__iter__ = lambda loader: _NotingIterator(original(loader), int(loader.num_workers), self.per_batch)
        return self

    def __exit__(self, *exc_info: object) -> None:
        from torch.utils.data import DataLoader

        DataLoader.__iter__ = self._original

    def save(self, name: str = "loader-probe-rank0.pt") -> None:
        """Seal the note with the launcher (the lab declares ``name`` under ``services: sealed_records``): it
        writes the sealed copy into the output folder after every process of the job is gone, so a file the
        program leaves under that name afterwards (from an ``atexit`` hook, say) is replaced, and one the
        entry never sealed is removed."""
        import torch

        batches, fewest = torch.tensor(len(self.per_batch)), torch.tensor(min(self.per_batch, default=-1))
        seal_torch(name, {"batches": batches, "min_workers": fewest})


def seal_torch(name: str, obj: object) -> None:
    """Seal ``obj``, as ``torch.save`` writes it, as this rank's record ``name`` (``sealedrecords.seal_or_write``)."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    seal_or_write(name, buffer.getvalue())

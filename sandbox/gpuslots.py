"""One run per GPU: a run claims one GPU index of its worker's host for as long as it runs.

The claim is an exclusive ``flock`` on a file per GPU index, so it holds across the worker's
processes and is released by the kernel if the process dies.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def claim_gpu(total: int, folder: Path) -> Iterator[int | None]:
    """Yields a free GPU index (0 … total-1), or None when all are taken or there are none."""
    handle, index = None, None
    if total > 0:
        folder.mkdir(parents=True, exist_ok=True)
    for candidate in range(total):
        lock = open(folder / f"gpu{candidate}.lock", "a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        handle, index = lock, candidate
        break
    try:
        yield index
    finally:
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

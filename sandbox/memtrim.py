"""Give freed heap memory back to the operating system (glibc only; elsewhere a no-op).

A worker copies each run's artifacts (up to 64 MB) through its own memory. CPython frees those buffers,
but glibc keeps freed chunks in its arenas, so without a trim a long-lived worker's resident size only
ever grows with the largest runs it has seen.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    trim = _malloc_trim()
    if trim is None:
        return False
    return bool(trim(0))

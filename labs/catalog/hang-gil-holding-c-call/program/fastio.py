"""Fixed-size frames from a file descriptor straight into a tensor's memory.

Written for the nightly spool file: each batch is read with libc's read(2) directly into the
preallocated batch tensor, which saves the bytes object and the copy that ``os.read`` plus
``torch.frombuffer`` cost on every batch.
"""

import ctypes
import errno
import os

import torch

# PyDLL, not CDLL: the GIL stays held for the call. A spool-file read of a few KB returns in
# microseconds, and CDLL's release and re-acquire of the GIL around every call showed up in the
# profile as more than the read itself.
_libc = ctypes.PyDLL("libc.so.6", use_errno=True)
_read = _libc.read
_read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
_read.restype = ctypes.c_ssize_t


def read_into(fd: int, out: torch.Tensor) -> None:
    """Fill the contiguous tensor ``out`` with the next ``out.nbytes`` bytes of ``fd``."""
    if not out.is_contiguous():
        raise ValueError("read_into needs a contiguous tensor")
    address, size = out.data_ptr(), out.numel() * out.element_size()
    done = 0
    while done < size:
        n = _read(fd, address + done, size - done)
        if n == 0:
            raise EOFError(f"stream ended after {done} of {size} bytes")
        if n < 0:
            err = ctypes.get_errno()
            if err == errno.EINTR:
                continue
            raise OSError(err, os.strerror(err))
        done += n

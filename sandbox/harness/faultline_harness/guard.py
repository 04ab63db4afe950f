"""Process attributes that keep the ranks away from the launcher (Linux ``prctl`` through libc).

The ranks run as the same user as the launcher, so file permissions alone would let a rank open
``/proc/<launcher>/fd/1`` and write lines in the launcher's name. A process that is not *dumpable*
has its ``/proc`` entries owned by root and refuses ptrace-style access (``fd/``, ``environ``, ``mem``)
to every process without ``CAP_SYS_PTRACE``, which no lab container has. The launcher makes itself
undumpable before it starts a rank; a rank forked from a zygote makes itself dumpable again, so the
launcher can still read its memory figures and the diag tool can still signal it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def _libc_prctl() -> Callable[..., int] | None:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None


def prctl(option: int, value: int) -> bool:
    call = _libc_prctl()
    if call is None:
        return False
    return call(option, value, 0, 0, 0) == 0


def set_dumpable(dumpable: bool) -> bool:
    return prctl(PR_SET_DUMPABLE, 1 if dumpable else 0)


def keep_memory_private() -> None:
    """Make this process undumpable, or fail loudly: a graded run's hidden entry calls it before it holds
    a secret (its rank's data key), so no other process of the job can read that secret through /proc."""
    if not set_dumpable(False):
        raise OSError("prctl(PR_SET_DUMPABLE, 0) failed: this rank's memory would be readable by the others")


def parent_death_hook() -> Callable[[], None] | None:
    """A preexec_fn that makes a rank die with the launcher, even if the launcher is SIGKILLed."""
    call = _libc_prctl()
    if call is None:
        return None
    parent = os.getpid()

    def hook() -> None:
        call(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before the request took effect
            os._exit(137)

    return hook


def file_identity(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def close_descriptors_of(identities: set[tuple[int, int]], keep: tuple[int, ...] = (0, 1, 2)) -> None:
    """In a forked rank: close every inherited descriptor that reaches one of ``identities`` (the
    launcher's own stdout and stderr), so the rank holds no way into the trusted stream."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return
    for fd in fds:
        if fd in keep:
            continue
        if file_identity(fd) in identities:
            try:
                os.close(fd)
            except OSError:
                pass

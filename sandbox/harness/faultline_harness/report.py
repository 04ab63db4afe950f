"""Metric reporting for lab programs.

Usage inside a lab program::

    from faultline_harness import report

    report.step(step, loss=loss, grad_norm=norm, tokens_per_s=tps)
    report.metric("val_accuracy", acc, step=step)

Each call prints one ``@@fl {...}`` line on the process's real stdout. Under the launcher those
lines become telemetry tagged with the rank; run without the launcher they are just printed, so a
program keeps working when a candidate runs it by hand.

Values may be Python numbers, numpy scalars or one-element tensors. JSON cannot carry NaN or
infinity, so non-finite values are sent as the strings ``"nan"``, ``"inf"`` and ``"-inf"``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from .protocol import encode, jsonable

__all__ = ["metric", "step"]

_RESERVED = frozenset({"kind", "t", "rank", "step"})
_lock = threading.Lock()
# Set by the rank runtime (post-mortem of the first non-finite loss); None when run by hand.
step_observer: Callable[[int, Any], None] | None = None


def _reset_lock_after_fork() -> None:
    # A fork taken while another thread held the lock would leave the child unable to report.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_lock_after_fork)


def emit(event: dict[str, Any]) -> None:
    """Write one telemetry event line; used by the API below and by the rank runtime."""
    data = (encode(event) + "\n").encode("utf-8", errors="replace")
    with _lock:
        stream = sys.__stdout__
        try:
            if stream is not None and not stream.closed:
                # Flushing first keeps ordering with whatever the program already printed.
                stream.flush()
                stream.buffer.write(data)
                stream.buffer.flush()
            else:
                os.write(1, data)
        except (OSError, ValueError, AttributeError):
            pass  # a closed or broken stdout must never take the program down with it


def note(text: str) -> None:
    """One line from the harness for whoever reads the run's log (stderr, prefixed); never raises."""
    try:
        sys.stderr.write(f"faultline-harness: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


def step(
    step: int,
    *,
    loss: Any = None,
    grad_norm: Any = None,
    throughput: Any = None,
    **metrics: Any,
) -> None:
    """Report one training step. ``loss``, ``grad_norm`` and ``throughput`` are always present in the
    event (null when not given); any other keyword becomes an extra field."""
    clash = _RESERVED.intersection(metrics)
    if clash:
        raise ValueError(f"report.step: metric name(s) {sorted(clash)} are reserved")
    event: dict[str, Any] = {
        "kind": "metric",
        "step": int(jsonable(step)),
        "loss": jsonable(loss),
        "grad_norm": jsonable(grad_norm),
        "throughput": jsonable(throughput),
    }
    for name, value in metrics.items():
        event[name] = jsonable(value)
    emit(event)
    observer = step_observer
    if observer is not None:
        try:
            observer(event["step"], event["loss"])
        except Exception:  # noqa: BLE001 - the observer reports its own failures; reporting must go on
            pass


def metric(name: str, value: Any, step: int | None = None) -> None:
    """Report a single named value, optionally tied to a step."""
    event: dict[str, Any] = {"kind": "metric", "name": str(name), "value": jsonable(value)}
    if step is not None:
        event["step"] = int(jsonable(step))
    emit(event)

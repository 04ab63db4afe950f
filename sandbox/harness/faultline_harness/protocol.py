"""The ``@@fl`` line protocol: the one definition used by the launcher, the report API, the rank
runtime and the platform's worker, which imports this module rather than spelling the format again.

Trust is decided here too. The launcher is the container's only writer of its stdout (it runs as PID
1 and is not dumpable, so no rank can open its descriptors or signal it away), and it refuses to
forward a rank's event of a launcher kind. So an event whose kind is in ``LAUNCHER_KINDS`` is a
measurement taken outside the ranks; every other event was *reported by the program* and may be shown,
never trusted for a grade.
"""

from __future__ import annotations

import json
import math
from typing import Any

PREFIX = "@@fl "
PREFIX_BYTES = PREFIX.encode("ascii")

# Kinds only the launcher may produce. A rank printing one of these is treated as plain output so a
# program cannot fake the end of a run, an exit status or a memory sample.
START, MEMORY, CONTAINER_MEMORY, HEARTBEAT, RANK_EXIT, END = (
    "start", "memory", "container_memory", "heartbeat", "rank_exit", "end",
)  # fmt: skip
LAUNCHER_KINDS = frozenset({START, MEMORY, CONTAINER_MEMORY, HEARTBEAT, RANK_EXIT, END})

# The zygote's one line once its preloads are imported (warm pool), before any job exists.
READY_LINE = "@@fl-zygote-ready"

# A rank's own post-mortem capture (see postmortem.py): reported by the program, so display only. Its
# "what" says which: the first non-finite loss, or the memory snapshot taken as the rank exits.
POSTMORTEM, POSTMORTEM_NONFINITE, POSTMORTEM_MEMORY_AT_EXIT = "postmortem", "nonfinite", "memory_at_exit"

# A rank held at a reported step for the candidate's tools, and let go again (see pausing.py). Reported by
# the program like any metric: they say what the candidate sees, and on practice runs only they give the
# run back the time spent paused, up to a cap the worker owns.
PAUSED, RESUMED = "paused", "resumed"
# Where a run's pause settings live: the run folder (written by the worker through ``diag control``), and
# before that file exists, the rank's environment (the conditions chosen before the run started).
CONTROL_FILE = "control.json"
ENV_PAUSE = "FAULTLINE_PAUSE"

# Kinds that show a rank is making forward progress (used for heartbeat "since_progress").
PROGRESS_KINDS = frozenset({"metric", "counter"})

# Environment variables the launcher hands to every rank.
ENV_RANK = "FAULTLINE_RANK"
ENV_WORLD_SIZE = "FAULTLINE_WORLD_SIZE"
ENV_OUTPUT_DIR = "FAULTLINE_OUTPUT_DIR"
ENV_RUN_DIR = "FAULTLINE_RUN_DIR"
ENV_DIST_BACKEND = "FAULTLINE_DIST_BACKEND"
# Services the launcher runs outside the ranks (JSON, set by the platform; see recordstore.py), and the
# sockets of the record store and the checkpoint store, which the launcher hands to every rank.
ENV_SERVICES = "FAULTLINE_SERVICES"
ENV_RECORD_STORE = "FAULTLINE_RECORD_STORE"
ENV_CHECKPOINT_STORE = "FAULTLINE_CHECKPOINT_STORE"
# The socket on which a rank hands the launcher its own grading records (see sealedrecords.py).
ENV_SEALED_RECORDS = "FAULTLINE_SEALED_RECORDS"
# The socket on which a rank asks the launcher for the secret key the launcher drew for it (see rankkeys.py).
ENV_RANK_KEYS = "FAULTLINE_RANK_KEYS"
# Set by the rank runtime in its own process; a descendant that inherits a different pid knows it is
# not the rank itself and must not grab the rank's signals or diag files.
ENV_OWNER_PID = "FAULTLINE_HARNESS_OWNER_PID"

# Candidate toggles, read by the rank runtime.
ENV_DETECT_ANOMALY = "FAULTLINE_DETECT_ANOMALY"
ENV_TRACEMALLOC = "FAULTLINE_TRACEMALLOC"
ENV_FAULTHANDLER_TIMEOUT = "FAULTLINE_FAULTHANDLER_TIMEOUT"


def stacks_file_name(rank: int | str) -> str:
    return f"stacks-rank{rank}.txt"


def memory_file_name(rank: int | str) -> str:
    return f"memory-rank{rank}.txt"


def jsonable(value: Any) -> Any:
    """Turn a metric value into something ``json.dumps(allow_nan=False)`` accepts.

    Non-finite floats become the strings "nan", "inf" and "-inf" because JSON has no literal for
    them and a diverging loss is exactly what a lab wants to show. Tensors and numpy scalars are
    unwrapped with ``.item()`` so this module never needs to import either library.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item):
        try:
            unwrapped = item()
        except (TypeError, ValueError, RuntimeError):
            unwrapped = None  # e.g. a multi-element tensor; fall through to float()/str()
        else:
            if isinstance(unwrapped, bool | int | float):
                return jsonable(unwrapped)
    try:
        return _float(float(value))
    except (TypeError, ValueError, RuntimeError):
        text = str(value)
        return text if len(text) <= 200 else text[:200] + "…"


def _float(value: float) -> float | str:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"


def encode(event: dict[str, Any]) -> str:
    """One telemetry line, without the trailing newline."""
    return PREFIX + json.dumps(jsonable(event), separators=(",", ":"), allow_nan=False)


def program_line(rank: int, text: str) -> str:
    """How the launcher writes one line a rank printed."""
    return f"[r{rank}] {text}"


def is_measurement(event: dict[str, Any]) -> bool:
    """True for the launcher's own events; False for anything a rank reported."""
    return event.get("kind") in LAUNCHER_KINDS


def decode(line: str) -> dict[str, Any] | None:
    """Parse a telemetry line; None when it is not one (platform-side helper, also used in tests)."""
    if not line.startswith(PREFIX):
        return None
    try:
        event = json.loads(line[len(PREFIX) :])
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("kind"), str):
        return None
    return event

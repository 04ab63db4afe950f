"""Entry point of the grader: ``python -P -m labs.grader_main REQUEST.json``.

A standby container starts as ``python -P -m labs.grader_main --wait SECONDS REQUEST.json``: it imports
torch, then waits for the request to appear (the worker renames it into place once the inputs are
written) and grades it, or exits with no answer after SECONDS without one.

The request names the grader's source, the artifacts folder, the variant's parameters and
both seeds. Prints one JSON line last: ``{"metrics": {...}}`` or ``{"candidate_error": "..."}``.
Any other ending (a crash, a kill at the time limit) is a platform fault, never the candidate's.
Runs inside the grader's container with nothing from the project but this package's two files.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from labs.grader_api import CandidateOutputError, GradeContext


def wait_for(request: Path, idle_seconds: float) -> bool:
    """True once ``request`` exists; False after ``idle_seconds`` without it."""
    import torch  # noqa: F401 - what a standby container is for: the import is done before the request comes

    deadline = time.monotonic() + idle_seconds
    while not request.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def main(argv: list[str]) -> int:
    if argv[1] == "--wait":
        if not wait_for(Path(argv[3]), float(argv[2])):
            return 0  # no answer: a standby nobody used
        argv = [argv[0], argv[3]]
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    namespace: dict = {"__name__": "lab_grader"}
    exec(compile(request["source"], request["filename"], "exec"), namespace)
    ctx = GradeContext(
        Path(request["artifacts"]), request["params"], int(request["seed"]), int(request["ranks"]),
        probe_seed=int(request["probe_seed"]),
    )  # fmt: skip
    try:
        metrics = namespace["evaluate"](ctx)
    except CandidateOutputError as exc:
        print(json.dumps({"candidate_error": str(exc)}), flush=True)
        return 0
    clean = {}
    for key, value in metrics.items():
        value = float(value)
        clean[str(key)] = value if math.isfinite(value) else str(value)
    print(json.dumps({"metrics": clean}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

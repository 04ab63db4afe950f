"""Entry point of the grader process: ``python -m labs.grader_main`` with a JSON request on stdin.

Prints one JSON line: ``{"metrics": {...}}`` or ``{"candidate_error": "..."}``. Any
other ending (a crash, a timeout) is a platform fault, never the candidate's.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from labs.grader_api import CandidateOutputError, GradeContext


def main() -> int:
    request = json.loads(sys.stdin.read())
    namespace: dict = {"__name__": "lab_grader"}
    exec(compile(request["source"], request["filename"], "exec"), namespace)
    ctx = GradeContext(Path(request["artifacts"]), request["params"], int(request["seed"]), int(request["ranks"]))
    try:
        metrics = namespace["evaluate"](ctx)
    except CandidateOutputError as exc:
        print(json.dumps({"candidate_error": str(exc)}))
        return 0
    clean = {}
    for key, value in metrics.items():
        value = float(value)
        clean[str(key)] = value if math.isfinite(value) else str(value)
    print(json.dumps({"metrics": clean}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

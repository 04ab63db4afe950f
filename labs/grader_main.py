"""Entry point of the grader: ``python -P -m labs.grader_main REQUEST.json``.

The request names the grader's source, the artifacts folder, the variant's parameters and
both seeds. Prints one JSON line last: ``{"metrics": {...}}`` or ``{"candidate_error": "..."}``.
Any other ending (a crash, a kill at the time limit) is a platform fault, never the candidate's.
Runs inside the grader's container with nothing from the project but this package's two files.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from labs.grader_api import CandidateOutputError, GradeContext


def main(argv: list[str]) -> int:
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

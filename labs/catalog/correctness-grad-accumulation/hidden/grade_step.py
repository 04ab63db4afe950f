"""Grading entry: keeps a copy of the submitted step function for the grader, then runs the job.

The copy is taken before any of the candidate's code runs. The grader runs it in a fresh
interpreter in its own container, on a network and batches drawn from the held-out seed, and
checks every parameter it returns against its own full-batch steps: nothing this job writes
about its own steps is evidence.
"""

import json
import os
import runpy

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
SNAPSHOT = "submitted_code.json"
OWN = os.path.basename(__file__)

code = {}
for name in sorted(os.listdir(HERE)):
    path = os.path.join(HERE, name)
    if name.endswith(".py") and name != OWN and os.path.isfile(path) and not os.path.islink(path):
        with open(path, encoding="utf-8", errors="replace") as fh:
            code[name] = fh.read(1_000_000)
with open(os.path.join(OUT, SNAPSHOT), "w", encoding="utf-8") as fh:
    json.dump(code, fh)

runpy.run_path(os.path.join(HERE, "train.py"), run_name="__main__")

"""Graded runs: every rank gets the key of the rows on its own node, and notes the steps it takes.

The launcher draws the key and hands it to this rank alone; it is put in this process's environment after
the process has been made undumpable (no other process of the job can read its memory or environment
through /proc), and the launcher writes it out for the grader after the job, whatever the program does
with its copy. Another rank cannot rebuild this rank's rows, so no rank can run the job for all.

After each optimizer step the rank notes a fingerprint of its weights (faultline_harness.stepprints);
the record is handed to the launcher when the program ends, which writes it next to the weights once
the job is over, out of the other ranks' reach.
"""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]


from faultline_harness.gradedentry import private_key, run_program
from faultline_harness.stepprints import StepFingerprints

if __name__ == "__main__":
    rank = int(os.environ.get("RANK", "0"))
    private_key("RANK_DATA_KEY")
    steps = StepFingerprints().install()
    try:
        run_program(PROGRAM_DIR)
    finally:
        steps.seal(f"steps-rank{rank}.pt")

"""Grading entry: keeps a copy of the submitted code for the grader, then runs the job.

The copy is taken before any of the candidate's code runs. The grader calls the copy's
cross_entropy in a fresh interpreter in its own container, on distillation-sized float32 logits it
draws from the held-out seed, and compares every loss with its own float64 cross-entropy: nothing
this job writes about its loss is evidence.
"""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]


from faultline_harness.gradedentry import run_program, snapshot_code

HERE = os.path.dirname(os.path.abspath(__file__))
snapshot_code(HERE, skip=os.path.basename(__file__))
run_program(PROGRAM_DIR)

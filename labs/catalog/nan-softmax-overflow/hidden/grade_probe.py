"""Grading entry: runs the job; the grader tests the submitted loss itself.

The platform hands the grader the code the run was started with. The grader calls its
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


from faultline_harness.gradedentry import run_program

run_program(PROGRAM_DIR)

"""Graded runs: note how many worker processes served each batch of every DataLoader, then
run the candidate's train.py unchanged. The note is sealed with the launcher, which writes it into the output
folder after the job (loader-probe-rank0.pt), whatever the program leaves there."""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]

from faultline_harness.gradedentry import LoaderWorkers, run_program

if __name__ == "__main__":
    with LoaderWorkers() as workers:
        try:
            run_program(PROGRAM_DIR)
        finally:
            workers.save()

"""Grading entry: supervises the job itself; the grader tests the submitted checkpoint functions.

The platform hands the grader the code the run was started with; the grader runs its checkpoint functions
in fresh interpreters of its own, on a network and batches drawn from the held-out seed. The job is
run here, not through main.py: the first worker (a process forked from this one, which runs none of
the candidate's code) is reclaimed at step {{ resume_step }} + {{ lost_steps }}, and a second one must
resume. A job whose first worker is never reclaimed has not shown that it resumes, and fails.
"""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]

import multiprocessing
import signal

import torch._dynamo  # noqa: F401 - AdamW imports it on first use: once here, not in every worker
from faultline_harness.gradedentry import run_program

RECLAIM_AT_STEP = {{ resume_step }} + {{ lost_steps }}


def worker(reclaim_at):
    os.environ.pop("SPOT_RECLAIM_AT_STEP", None)
    if reclaim_at is not None:
        os.environ["SPOT_RECLAIM_AT_STEP"] = str(reclaim_at)
    run_program(PROGRAM_DIR)


def attempt(reclaim_at):
    process = multiprocessing.get_context("fork").Process(target=worker, args=(reclaim_at,))
    process.start()
    process.join()
    return process.exitcode


if __name__ == "__main__":
    
    print("--- attempt 1: starting a worker", flush=True)
    first = attempt(RECLAIM_AT_STEP)
    if first != -signal.SIGKILL:
        sys.exit(
            f"the first worker ended with exit status {first} instead of being reclaimed at step {RECLAIM_AT_STEP}: "
            "the grading run reclaims it through SPOT_RECLAIM_AT_STEP (the spot pool's stand-in in train.py)"
        )
    print("--- attempt 1: worker reclaimed (SIGKILL)", flush=True)
    print("--- attempt 2: starting a worker", flush=True)
    sys.exit(attempt(None))

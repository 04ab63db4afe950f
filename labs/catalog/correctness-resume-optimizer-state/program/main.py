"""Runs the training job the way the spot pool does: a reclaimed worker is replaced by a fresh one,
which runs train.py from the top again, and train.py resumes from its checkpoint.

Each worker is a new process forked from this supervisor, which has imported torch and nothing of
the job: it starts warm, and it inherits nothing of the worker it replaces.
"""

import multiprocessing
import os
import runpy
import signal
import sys

import torch._dynamo  # noqa: F401 - AdamW imports it on first use: once here, not in every worker

HERE = os.path.dirname(os.path.abspath(__file__))
# When the pool takes the first worker back in this reproduction (a step count); None: never.
RECLAIM_AT_STEP = {{ resume_step }} + {{ lost_steps }}
MAX_ATTEMPTS = 3


def worker(reclaim_at: int | None) -> None:
    os.environ.pop("SPOT_RECLAIM_AT_STEP", None)
    if reclaim_at is not None:
        os.environ["SPOT_RECLAIM_AT_STEP"] = str(reclaim_at)
    sys.path.insert(0, HERE)
    runpy.run_path(os.path.join(HERE, "train.py"), run_name="__main__")


if __name__ == "__main__":
    fork = multiprocessing.get_context("fork")
    for attempt in range(1, MAX_ATTEMPTS + 1):
        print(f"--- attempt {attempt}: starting a worker", flush=True)
        process = fork.Process(target=worker, args=(RECLAIM_AT_STEP if attempt == 1 else None,))
        process.start()
        process.join()
        if process.exitcode != -signal.SIGKILL:
            sys.exit(process.exitcode)
        print(f"--- attempt {attempt}: worker reclaimed (SIGKILL)", flush=True)
    sys.exit(f"gave up after {MAX_ATTEMPTS} reclaimed workers")

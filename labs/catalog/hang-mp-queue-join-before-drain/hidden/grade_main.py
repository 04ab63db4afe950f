"""Graded runs: note this process's pid (the job's main process), then run the candidate's embed.py
unchanged. The authoritative corpus.py notes the pid of every process that reads a shard; the grader
counts the shards that only worker processes read."""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]

import json

from faultline_harness.gradedentry import output_path, run_program

if __name__ == "__main__":
    with open(output_path("graded-job.json"), "w", encoding="utf-8") as note:
        json.dump({"pid": os.getpid()}, note)
    run_program(PROGRAM_DIR, "embed.py")

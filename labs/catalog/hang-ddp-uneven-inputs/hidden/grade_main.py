"""Graded runs: every rank gets the key of the part files on its own node, and notes the steps it takes.

The key is drawn here, inside the rank, after the process has been made undumpable (no other process of
the job can read its memory or environment through /proc), and reaches the program only through this
process's environment. Another rank cannot rebuild this rank's rows, so no rank can train on the whole
export by itself: the rows meet only through the ranks' communication.

After each optimizer step the rank notes a fingerprint of its weights (faultline_harness.stepprints);
the record is handed to the launcher when the program ends, which writes it next to the weights once
the job is over, out of the other ranks' reach.
"""

import os
import runpy
import secrets

from faultline_harness.guard import keep_memory_private
from faultline_harness.stepprints import StepFingerprints

if __name__ == "__main__":
    rank = int(os.environ.get("RANK", "0"))
    keep_memory_private()
    os.environ["EXPORT_PART_KEY"] = str(secrets.randbits(48))
    steps = StepFingerprints().install()
    try:
        runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "train.py"), run_name="__main__")
    finally:
        steps.seal(f"steps-rank{rank}.pt")

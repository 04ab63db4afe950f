"""Graded runs write their checkpoints to the busy production store, which is slower."""

import os
import runpy

os.environ.update(CKPT_STORE_MB_PER_S="{{ graded_mb_per_s }}")
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "train.py"), run_name="__main__")

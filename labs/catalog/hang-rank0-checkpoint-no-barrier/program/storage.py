"""The shared checkpoint store.

This module stands in for the network file system the cluster mounts for checkpoints:
writes go through at the store's bandwidth, which other jobs share, so it varies a lot
from run to run. Treat it as infrastructure: the fix does not belong here.
"""

import glob
import io
import os
import time

import torch

STORE_DIR = "checkpoints"
STORE_MB_PER_S = float(os.environ.get("CKPT_STORE_MB_PER_S", "{{ store_mb_per_s }}"))
CHUNK = 256 * 1024


def save_checkpoint(state: dict, name: str) -> str:
    """Write `state` to the store; readers only ever see complete files (write, fsync, rename)."""
    os.makedirs(STORE_DIR, exist_ok=True)
    buf = io.BytesIO()
    torch.save(state, buf)
    data = buf.getvalue()
    path = os.path.join(STORE_DIR, name)
    partial = path + ".partial"
    with open(partial, "wb") as f:
        for offset in range(0, len(data), CHUNK):
            f.write(data[offset : offset + CHUNK])
            time.sleep(CHUNK / (STORE_MB_PER_S * 1e6))  # the store's bandwidth
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, path)
    return path


def latest_checkpoint() -> str | None:
    """The newest complete checkpoint in the store, or None."""
    paths = sorted(glob.glob(os.path.join(STORE_DIR, "step-*.pt")))
    return paths[-1] if paths else None


def load_checkpoint(path: str) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)

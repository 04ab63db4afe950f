"""Grading entry: train with the candidate's code, then call its cross_entropy on distillation-sized logits."""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]


import torch
from faultline_harness.gradedentry import run_program

run_program(PROGRAM_DIR)

from ops import cross_entropy  # noqa: E402  (the candidate's module, after training)

PROBE_SEED = {{ probe_seed }}


def probe_inputs(seed):
    """Rows of float32 logits around offsets from 0 to the thousands, both signs, labels within reach."""
    g = torch.Generator().manual_seed(seed)
    rows, classes = 64, 8
    offsets = torch.zeros(rows, 1, dtype=torch.float32)
    offsets[16:32, 0] = 100 + 600 * torch.rand(
        16, generator=g, dtype=torch.float32
    )  # beyond float32's exp, within float64's
    offsets[32:, 0] = (800 + 2200 * torch.rand(32, generator=g, dtype=torch.float32)) * torch.where(
        torch.rand(32, generator=g, dtype=torch.float32) < 0.5, -1.0, 1.0
    )
    logits = (offsets + 10 * torch.randn(rows, classes, generator=g, dtype=torch.float32)).to(torch.float32)
    labels = torch.randint(0, classes, (rows,), generator=g)
    return logits, labels


logits, labels = probe_inputs(PROBE_SEED)
with torch.no_grad():
    per_row = torch.stack(
        [torch.as_tensor(cross_entropy(logits[i : i + 1], labels[i : i + 1])).reshape(()) for i in range(len(labels))]
    )
    batch = torch.as_tensor(cross_entropy(logits, labels)).reshape(())
result = {"per_row": per_row.detach().double(), "batch": batch.detach().double()}
torch.save(result, os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "probe.pt"))
print("loss probe saved")

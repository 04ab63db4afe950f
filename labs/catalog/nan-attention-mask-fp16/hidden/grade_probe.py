"""Grading entry: train with the candidate's code, then probe its attention in fp16 on hidden batches."""

import os
import sys

# First on sys.path is the program's folder, where the candidate's files are: taken off (every
# occurrence) before any other import, so none of them can stand in for a module this entry needs.
PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]


import torch
from faultline_harness.gradedentry import run_program

run_program(PROGRAM_DIR)

from attention import masked_attention  # noqa: E402  (the candidate's module, after training)

PROBE_SEED = {{ probe_seed }}


def probe_inputs(seed):
    """Left-padded batches under a causal mask: rows before the first real token see no key at all."""
    g = torch.Generator().manual_seed(seed)
    batch, heads, seq, dim = 8, 2, 12, 16
    q, k, v = (torch.randn(batch, heads, seq, dim, generator=g).half() for _ in range(3))
    lengths = torch.randint(1, seq + 1, (batch,), generator=g)
    lengths[0] = 0  # an empty session: every position is padding
    lengths[1] = seq  # a full one
    mask = torch.arange(seq)[None, :] >= (seq - lengths)[:, None]
    upstream = torch.randn(batch, heads, seq, dim, generator=g)
    return q, k, v, mask, upstream


q, k, v, mask, upstream = probe_inputs(PROBE_SEED)
q.requires_grad_(True)
k.requires_grad_(True)
v.requires_grad_(True)
out = masked_attention(q, k, v, mask)
result = {"out": out.detach().float()}
# Gradient as in fp16 training: only real positions carry a loss.
(out.float() * upstream * mask[:, None, :, None]).sum().backward()
grads = [t.grad for t in (q, k, v)]
result["grads_finite"] = torch.tensor(float(all(g is not None and bool(torch.isfinite(g).all()) for g in grads)))
torch.save(result, os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "probe.pt"))
print("attention probe saved")

"""Grades the data-loading fix on what the run left behind, with data the candidate never saw.

At grading, the storage client (dataset.py) is replaced by the authoritative copy, whose
store is seeded with the probe seed (``ctx.probe_seed``), not the seed of the candidate's own runs. So:
- the access log it wrote shows whether every record of the shard was really fetched (at least
  once: keeping fetched records in memory for later epochs is a legitimate speed-up);
- the saved head must tag fresh records of that store correctly, on features drawn from the
  held-out seed (``ctx.seed``), which no file of the run carries; it learns the tagging only by
  reading the store through the client.
"""

import struct

import torch
from torch import nn

FEATURES = 32
CLASSES = 4
SHARD_SIZE = 2048


def evaluate(ctx):
    from labs.grader_api import CandidateOutputError

    raw = ctx.path("store_reads.bin").read_bytes()
    ids = [i for (i,) in struct.iter_unpack("<I", raw[: len(raw) // 4 * 4])]
    counts = torch.zeros(SHARD_SIZE, dtype=torch.long)
    for i in ids:
        if 0 <= i < SHARD_SIZE:
            counts[i] += 1

    state = ctx.load("model.pt")
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
    try:
        model.load_state_dict(state)
    except Exception as exc:
        raise CandidateOutputError(f"model.pt does not fit the tagging head: {str(exc).splitlines()[0]}") from None

    g = torch.Generator().manual_seed(ctx.probe_seed)
    label_weights = torch.randn(FEATURES, CLASSES, generator=g)
    probe = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(4096, FEATURES, generator=probe)
    y = (x @ label_weights).argmax(1)
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    return {
        "min_reads_per_record": float(counts.min().item()),
        "records_read": float(len(ids)),
        "heldout_accuracy": acc,
    }

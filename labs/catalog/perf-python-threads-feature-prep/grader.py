"""Grades the feature-preparation fix on what the run saved, outside the candidate's process.

What the program says about its own speed is not evidence. Wall time is measured outside the program by
the ``speedup`` check; the grader makes sure that the time bought the whole workload:

- ``feature_rows`` and ``features_max_abs_diff``: in graded runs the export client reads the sessions of
  the probe seed (``ctx.probe_seed``, never shown to the candidate, so features cannot be prepared ahead),
  and the grader rebuilds every session and its features itself and compares every row. A run that
  prepared a sample, skipped "duplicates", truncated sessions, lowered the precision or fed the raw inputs
  ends with a missing row or a value off by far more than float32 rounding.
- ``heldout_accuracy``: the saved classifier, fed the reference features of fresh sessions drawn from
  the held-out seed (``ctx.seed``, which no file of the run carries), must still recognise their intent.
"""

import math

import torch
from torch import nn

from labs.grader_api import CandidateOutputError

# As in program/sessions.py and program/features.py. BUCKETS and TASK come from ctx.params (the
# platform's values for the attempt's seed), never from the program's constants.
ROWS = 64_000
SLOTS = 96
AMOUNTS = 8
TOPICS = 4
VOCAB = 1_000_000
FAVOURITES = 48
BLOCK = 4096
SALTS = (0x5BD1E995, 0x1B873593, 0x27D4EB2F, 0x165667B1)
MIX = 0x45D9F3B
MASK = 0xFFFFFFFF
HELDOUT = 4096


def load_sessions(task, seed, rows):
    """program/sessions.py's export, block by block from the same generator."""
    catalogue = torch.Generator().manual_seed(task)
    favourite = torch.randint(1, VOCAB, (TOPICS, FAVOURITES), generator=catalogue)
    typical = torch.randn(TOPICS, AMOUNTS, generator=catalogue, dtype=torch.float64)
    g = torch.Generator().manual_seed(seed)
    tokens, amounts, intents = [], [], []
    for start in range(0, rows, BLOCK):
        n = min(BLOCK, rows - start)
        intent = torch.randint(0, TOPICS, (n,), generator=g)
        length = torch.randint(SLOTS // 2, SLOTS + 1, (n,), generator=g)
        from_favourites = torch.rand(n, SLOTS, generator=g) < 0.25
        pick = torch.randint(0, FAVOURITES, (n, SLOTS), generator=g)
        anything = torch.randint(1, VOCAB, (n, SLOTS), generator=g)
        block = torch.where(from_favourites, favourite[intent[:, None], pick], anything)
        block[torch.arange(SLOTS)[None, :] >= length[:, None]] = 0
        tokens.append(block)
        amounts.append((typical[intent] + torch.randn(n, AMOUNTS, generator=g, dtype=torch.float64)) * 40.0)
        intents.append(intent)
    return torch.cat(tokens), torch.cat(amounts), torch.cat(intents)


def reference_features(tokens, amounts, buckets):
    """features.session_features for every session, in float64, as float32."""
    parts = []
    for block in tokens.split(2048):
        present = block != 0
        hashed = torch.zeros(len(block), buckets, dtype=torch.float64)
        for salt in SALTS:
            h = (block + salt) & MASK
            h = (((h >> 16) ^ h) * MIX) & MASK
            h = (((h >> 16) ^ h) * MIX) & MASK
            h = (h >> 16) ^ h
            signs = ((h & 1) * 2 - 1).to(torch.float64) * present
            hashed.scatter_add_(1, (h >> 1) % buckets, signs)
        parts.append(hashed / present.sum(1, keepdim=True).clamp(min=1).to(torch.float64).sqrt())
    logged = torch.sign(amounts) * torch.log1p(amounts.abs())
    return torch.cat([torch.cat(parts), logged], 1).to(torch.float32)


def classifier(width):
    return nn.Sequential(nn.Linear(width, 64), nn.ReLU(), nn.Linear(64, TOPICS))


def evaluate(ctx):
    torch.set_num_threads(1)
    task, buckets = int(ctx.params["task"]), int(ctx.params["buckets"])
    width = buckets + AMOUNTS
    saved = ctx.load("features.pt")
    if not isinstance(saved, torch.Tensor):
        raise CandidateOutputError("features.pt does not hold a tensor")
    tokens, amounts, _ = load_sessions(task, ctx.probe_seed, ROWS)
    want = reference_features(tokens, amounts, buckets)
    rows = saved.shape[0] if saved.dim() == 2 else 0
    if saved.shape != want.shape:
        diff = 1e9  # a missing row or column is no match, whatever the values
    else:
        diff = (saved.to(torch.float64) - want.to(torch.float64)).abs().max().item()
        diff = diff if math.isfinite(diff) else 1e9

    model = ctx.load_into(classifier(width), "model.pt", dtype=torch.float32)
    x_tokens, x_amounts, x_intent = load_sessions(task, ctx.seed, HELDOUT)
    with torch.no_grad():
        logits = model(reference_features(x_tokens, x_amounts, buckets))
    hit = (logits.argmax(1) == x_intent) & torch.isfinite(logits).all(1)
    return {"feature_rows": float(rows), "features_max_abs_diff": diff, "heldout_accuracy": hit.float().mean().item()}

"""Recomputes the night's scores and drift statistics from the release weights and the data.

The scorer's weights and every hour of transactions are rebuilt from the variant's seeds;
the job must have scored every row and reported drift statistics for every batch and
every unit that match what the monitored layer really produced.
"""

import math

import torch
from torch import nn

from labs.grader_api import CandidateOutputError

FEATURES = 48


def _scorer(width, seed):
    blocks = nn.ModuleList(
        [nn.Sequential(nn.Linear(FEATURES, width), nn.ReLU())]
        + [nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(3)]
    )
    head = nn.Linear(width, 1)
    g = torch.Generator().manual_seed(seed)
    named = [(f"blocks.{name}", p) for name, p in blocks.named_parameters()]
    named += [(f"head.{name}", p) for name, p in head.named_parameters()]
    with torch.no_grad():
        for name, p in named:
            if name.endswith("weight"):
                gain = 0.5 if name.startswith("head") else 2.0
                p.copy_(torch.randn(p.shape, generator=g) * (gain / p.shape[1]) ** 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1 - 0.05)
        head.bias.fill_(-2.0)
    return blocks, head


def _transactions(hour, seed, rows):
    g = torch.Generator().manual_seed(seed * 1000 + hour)
    drift = 0.02 * hour * torch.linspace(-1.0, 1.0, FEATURES)
    return torch.randn(rows, FEATURES, generator=g) + drift


def _tensor(value, what):
    if not isinstance(value, torch.Tensor):
        raise CandidateOutputError(f"{what} must be a tensor")
    return value.detach().float()


def evaluate(ctx):
    hours, rows = int(ctx.params["hours"]), int(ctx.params["rows"])
    width, layer = int(ctx.params["width"]), int(ctx.params["layer"])
    blocks, head = _scorer(width, int(ctx.params["release_seed"]))
    scores = _tensor(ctx.load("scores.pt"), "scores.pt").flatten()
    drift = ctx.load("drift.pt")
    if not isinstance(drift, dict) or "batch_stats" not in drift or "firing_rate" not in drift:
        raise CandidateOutputError("drift.pt must hold a dict with 'batch_stats' and 'firing_rate'")
    stats = _tensor(drift["batch_stats"], "batch_stats")
    firing = _tensor(drift["firing_rate"], "firing_rate").flatten()

    want_scores, want_stats = [], []
    fired = torch.zeros(width, dtype=torch.float64)
    with torch.no_grad():
        for hour in range(hours):
            h = _transactions(hour, int(ctx.params["data_seed"]), rows)
            for i, block in enumerate(blocks):
                h = block(h)
                if i == layer:
                    want_stats.append(torch.stack([h.mean(), (h <= 0).float().mean()]))
                    fired += (h > 0).sum(0)
            want_scores.append(torch.sigmoid(head(h)).squeeze(-1))
    want_scores = torch.cat(want_scores)
    want_stats = torch.stack(want_stats)
    want_firing = (fired / (hours * rows)).float()

    def max_error(got, want):
        return (got - want).abs().max().item() if got.shape == want.shape else math.inf

    return {
        "rows_scored": float(scores.numel()),
        "scores_max_error": max_error(scores, want_scores),
        "drift_batches_reported": float(stats.shape[0]) if stats.dim() == 2 else 0.0,
        "batch_stats_max_error": max_error(stats, want_stats),
        "firing_rate_max_error": max_error(firing, want_firing),
    }

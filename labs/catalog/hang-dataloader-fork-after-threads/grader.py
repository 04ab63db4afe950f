"""Did the job load its batches through worker processes, and does the model predict well?

The graded entry point (a hidden wrapper around train.py) notes the num_workers of every
DataLoader that handed out a batch; loading in the main process (num_workers=0) would
serialise the per-record fetches. Held-out calibrated readings come from the hidden seed.
"""

import torch
from labs.grader_api import CandidateOutputError

FEATURES = 8


def evaluate(ctx):
    state = ctx.load("model.pt")
    model = torch.nn.Linear(FEATURES, 1)
    try:
        model.load_state_dict(state)
    except Exception as exc:
        raise CandidateOutputError(f"model.pt does not fit nn.Linear(8, 1): {str(exc).splitlines()[0]}") from None
    probe = ctx.load("loader_probe.pt")
    g = torch.Generator().manual_seed(ctx.seed)
    z = torch.randn(4096, FEATURES, generator=g)
    y = z @ torch.linspace(-1.0, 1.0, FEATURES)
    with torch.no_grad():
        pred = model(z).squeeze(-1)
    return {
        "heldout_r2": 1.0 - torch.mean((pred - y) ** 2).item() / y.var().item(),
        "loader_workers": float(probe["min_workers"]),
    }

"""Is the reported validation MSE the true job-wide number, and did the model learn?

The grader rebuilds every site's validation rows from the variant's parameters, runs the
saved model on all of them, and compares the job-wide MSE with the one the program saved.
A rank-0-only number (the collective deleted or skipped) differs by a wide margin because
the sites' noise levels differ. It also scores the model on fresh rows from the hidden seed.
"""

import math

import torch
from labs.grader_api import CandidateOutputError
from torch import nn

FEATURES = 6


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body(x).squeeze(-1)


def site_data(data_seed, site, split, n, noise, generator=None):
    g = generator or torch.Generator().manual_seed(data_seed * 10 + site * 2 + (split == "val"))
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = x @ w + 0.5 * torch.sin(2.0 * x[:, 0]) + noise[site] * torch.randn(n, generator=g)
    return x, y


def evaluate(ctx):
    p = ctx.params
    noise = (0.1, float(p["site1_noise"]))
    val_rows = (int(p["val_rows0"]), int(p["val_rows1"]))
    net = Net()
    try:
        net.load_state_dict(ctx.load("model.pt"))
    except CandidateOutputError:
        raise
    except Exception as exc:
        raise CandidateOutputError(f"model.pt does not fit the lab's Net: {str(exc).splitlines()[0]}") from None
    saved = ctx.load("val_metrics.pt")
    if not isinstance(saved, dict) or "val_mse" not in saved:
        raise CandidateOutputError("val_metrics.pt must hold {'val_mse': tensor}")
    reported = float(saved["val_mse"])
    net.eval()
    err, rows = 0.0, 0
    with torch.no_grad():
        for site in range(ctx.ranks):
            x, y = site_data(int(p["data_seed"]), site, "val", val_rows[site], noise)
            err += (net(x) - y).double().pow(2).sum().item()
            rows += len(y)
        true_mse = err / rows
        # Fresh rows from both sites, noise-free targets: does the model fit the signal?
        g = torch.Generator().manual_seed(ctx.seed)
        x, y = site_data(0, 0, "val", 2048, (0.0, 0.0), generator=g)
        heldout = 1.0 - torch.mean((net(x) - y) ** 2).item() / y.var().item()
    rel = abs(reported - true_mse) / true_mse if math.isfinite(reported) else math.inf
    return {"val_mse_rel_error": rel, "heldout_r2": heldout, "true_val_mse": true_mse, "reported_val_mse": reported}

"""Held-out R² of the saved power model on fresh, complete readings from the same plant."""

import math

import torch
from torch import nn

CHANNELS = 10
HIDDEN = 64


class PowerModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(CHANNELS, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1)
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


def plant_response(z, plant):
    w = torch.randn(CHANNELS, generator=torch.Generator().manual_seed(plant)) / math.sqrt(CHANNELS)
    return 2.0 * (z @ w) + torch.tanh(z[:, 0] * z[:, 1]) + 0.3 * z[:, 2] ** 2


def evaluate(ctx):
    from labs.grader_api import r2, weights_finite

    net = ctx.load_into(PowerModel(), "model.pt", dtype=torch.float32)
    finite = weights_finite(net)
    # Fresh readings, none missing, from the held-out seed: nothing the job could read predicts them.
    z = torch.randn(4096, CHANNELS, generator=torch.Generator().manual_seed(ctx.seed))
    y = plant_response(z, int(ctx.params["data_seed"]))
    with torch.no_grad():
        pred = net(z)
    score = r2(pred, y) if finite else -1.0
    torch.manual_seed(0)
    initial = PowerModel().state_dict()
    state = net.state_dict()
    changed = max((state[k] - initial[k]).abs().max().item() for k in initial)
    return {
        "weights_finite": 1.0 if finite else 0.0,
        "heldout_r2": score if math.isfinite(score) else -1.0,
        "weights_changed": changed if math.isfinite(changed) else 0.0,
    }

"""Held-out quality of the saved regressor, against the reference recipe on the same variant.

The grader trains the reference recipe itself: this variant's training data, inputs standardised,
the program's optimizer, learning rate, step count and seed. It then scores both models on fresh
raw-unit readings drawn from ``ctx.seed``. The gate is the ratio of held-out MSEs. A model that
never trained (a learning rate too small to move it, steps skipped) or was fitted in closed form (a
least-squares line cannot follow the interaction of the first two sensors) stays many times above
the reference; a fix that standardises the inputs in its own way lands within a small factor.
"""

import math

import torch
from torch import nn

FEATURES = 8
TRAIN_ROWS, STEPS, BATCH = 4096, 400, 128
HELDOUT_ROWS = 4096


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("in_mean", torch.zeros(FEATURES))
        self.register_buffer("in_std", torch.ones(FEATURES))
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.LeakyReLU(0.1), nn.Linear(32, 1))

    def forward(self, x):
        return self.body((x - self.in_mean) / self.in_std).squeeze(-1)


def readings(z: torch.Tensor, scale: float) -> torch.Tensor:
    """Raw sensor units, as the program's data.py produces them."""
    return z * scale + torch.arange(FEATURES, dtype=torch.float32) * scale


def clean_target(z: torch.Tensor) -> torch.Tensor:
    return 0.5 * (z @ torch.linspace(-1.0, 1.0, FEATURES)) + 1.5 * torch.tanh(z[:, 0] * z[:, 1])


def training_data(seed: int, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(TRAIN_ROWS, FEATURES, generator=g)
    y = clean_target(z) + 0.05 * torch.randn(TRAIN_ROWS, generator=g)
    return readings(z, scale), y


def reference_model(params: dict) -> Net:
    """The reference fix, trained here: standardised inputs, then the program's own SGD loop."""
    x, y = training_data(int(params["data_seed"]), float(params["scale"]))
    torch.manual_seed(0)
    net = Net()
    net.in_mean.copy_(x.mean(0))
    net.in_std.copy_(x.std(0).clamp_min(1e-6))
    opt = torch.optim.SGD(net.parameters(), lr=float(params["lr"]), momentum=0.9)
    for _ in range(STEPS):
        idx = torch.randint(0, len(x), (BATCH,))
        loss = nn.functional.mse_loss(net(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def load_candidate(ctx) -> Net:
    return ctx.load_into(Net(), "model.pt", dtype=torch.float32)


def heldout_mse(net: Net, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        mse = torch.mean((net(x) - y) ** 2).item()
    return mse if math.isfinite(mse) else math.inf


def evaluate(ctx):
    torch.set_num_threads(1)
    candidate = load_candidate(ctx)
    finite = all(bool(torch.isfinite(v).all()) for v in candidate.state_dict().values())
    scale = float(ctx.params["scale"])
    z = torch.randn(HELDOUT_ROWS, FEATURES, generator=torch.Generator().manual_seed(ctx.seed))
    x, y = readings(z, scale), clean_target(z)
    mse = heldout_mse(candidate, x, y) if finite else math.inf
    reference_mse = heldout_mse(reference_model(ctx.params), x, y)
    variance = y.var().item()
    return {
        "weights_finite": 1.0 if finite else 0.0,
        "heldout_mse_ratio": mse / max(reference_mse, 1e-12),
        "heldout_r2": 1.0 - mse / variance if math.isfinite(mse) else -math.inf,
        "reference_heldout_r2": 1.0 - reference_mse / variance,
    }

"""Held-out R² of the saved regressor on fresh raw-unit data drawn from the same sensors."""

import torch
from torch import nn

FEATURES = 8


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("in_mean", torch.zeros(FEATURES))
        self.register_buffer("in_std", torch.ones(FEATURES))
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body((x - self.in_mean) / self.in_std).squeeze(-1)


def evaluate(ctx):
    state = ctx.load("model.pt")
    net = Net()
    try:
        net.load_state_dict(state)
    except Exception as exc:
        from labs.grader_api import CandidateOutputError

        raise CandidateOutputError(f"model.pt does not fit the lab's Net: {str(exc).splitlines()[0]}") from None
    scale = float(ctx.params["scale"])
    g = torch.Generator().manual_seed(ctx.seed)
    z = torch.randn(2048, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = z @ w + 0.5 * torch.tanh(z[:, 0] * z[:, 1])
    x = z * scale + torch.arange(FEATURES, dtype=torch.float32) * scale
    with torch.no_grad():
        pred = net(x)
        mse = torch.mean((pred - y) ** 2).item()
    torch.manual_seed(0)
    initial = Net().state_dict()
    changed = max((state[k].float() - initial[k].float()).abs().max().item() for k in initial if k.startswith("body"))
    return {"heldout_r2": 1.0 - mse / y.var().item(), "weights_changed": changed}

"""Same weights on every rank, and a model that learned what both stages teach.

Each rank saves its final weights. The held-out rows come from the hidden seed; a second
stage that starts from fresh weights instead of the first stage's checkpoint cannot reach
the threshold in its few low-learning-rate steps.
"""

import torch
from labs.grader_api import CandidateOutputError
from torch import nn

FEATURES = 16


class Net(nn.Module):
    def __init__(self, hidden: int = 384) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def forward(self, x):
        return self.body(x).squeeze(-1)


def load_net(ctx, name):
    state = ctx.load(name)
    net = Net()
    try:
        net.load_state_dict(state)
    except Exception as exc:
        raise CandidateOutputError(f"{name} does not fit the lab's Net: {str(exc).splitlines()[0]}") from None
    return net


def evaluate(ctx):
    nets = [load_net(ctx, f"model-rank{r}.pt") for r in range(ctx.ranks)]
    reference = nets[0].state_dict()
    diff = 0.0
    for net in nets[1:]:
        for key, value in net.state_dict().items():
            diff = max(diff, (value - reference[key]).abs().max().item())
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(4096, FEATURES, generator=g)
    y = x @ torch.linspace(-1.0, 1.0, FEATURES) + 0.5 * torch.sin(2.0 * x[:, 0])
    with torch.no_grad():
        r2 = [1.0 - torch.mean((net(x) - y) ** 2).item() / y.var().item() for net in nets]
    return {"param_max_diff": diff, "heldout_r2": min(r2)}

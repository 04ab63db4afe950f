"""Held-out accuracy and cross-entropy of the saved triage model on fresh incidents of the same fleet.

Both gates measure the model, not the log. Accuracy alone is not enough here: with std-1 weights the
network is a random feature map with logits in the millions, and a cover-up that keeps those
weights finite (clipped gradients, a learning rate small enough not to overflow) still gets a
fair share of incidents right through the head layer. What it cannot get is a sane loss: every
miss costs ~1e5 nats at that logit scale. A model trained from a fan-in-aware init scores above
0.9 accuracy with a loss well under 0.5.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

FEATURES = 32
CLASSES = 8
DEPTH = 6  # hidden layers, as train.py builds TriageNet
HELDOUT_ROWS = 4096


class TriageNet(nn.Module):
    """Same layout (and state_dict keys) as program/model.py; the init does not matter here."""

    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        fan_in = FEATURES
        for _ in range(depth):
            layers += [nn.Linear(fan_in, width), nn.ReLU()]
            fan_in = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, CLASSES)

    def forward(self, x):
        return self.head(self.body(x))


def heldout_incidents(task: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """program/data.py's distribution for this fleet (`task`), sampled from the grader's own seed."""
    centres = torch.randn(CLASSES * 2, FEATURES, generator=torch.Generator().manual_seed(task))
    g = torch.Generator().manual_seed(seed)
    cluster = torch.randint(0, CLASSES * 2, (HELDOUT_ROWS,), generator=g)
    x = 0.6 * centres[cluster] + 0.8 * torch.randn(HELDOUT_ROWS, FEATURES, generator=g)
    return x, cluster % CLASSES


def evaluate(ctx):
    from labs.grader_api import weights_finite

    torch.set_num_threads(1)
    net = TriageNet(int(ctx.params["width"]), DEPTH)
    net = ctx.load_into(net, "model.pt", dtype=torch.float32)
    finite = weights_finite(net)
    x, y = heldout_incidents(int(ctx.params["task"]), ctx.seed)
    with torch.no_grad():
        logits = net(x)
    # A row whose logits overflowed has no prediction: it counts as a miss, never as class 0.
    usable = torch.isfinite(logits).all(dim=1)
    accuracy = ((logits.argmax(dim=1) == y) & usable).float().mean().item()
    loss = F.cross_entropy(logits.double(), y).item() if finite and bool(usable.all()) else math.inf
    return {
        "weights_finite": 1.0 if finite else 0.0,
        "heldout_accuracy": accuracy if finite else 0.0,
        "heldout_loss": loss if math.isfinite(loss) else math.inf,
    }

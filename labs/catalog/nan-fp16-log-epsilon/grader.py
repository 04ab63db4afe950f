"""Held-out accuracy of the saved classifier on fresh parts from the same defect classes, in fp32."""

import math

import torch
from torch import nn

FEATURES = 16
HIDDEN = 64


class DefectClassifier(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
        self.head = nn.Linear(HIDDEN, classes)

    def forward(self, x):
        return self.head(self.body(x))


def fresh_parts(n, classes, centers_seed, sample_seed):
    centers = torch.randn(classes, FEATURES, generator=torch.Generator().manual_seed(centers_seed))
    g = torch.Generator().manual_seed(sample_seed)
    labels = torch.randint(0, classes, (n,), generator=g)
    return centers[labels] + torch.randn(n, FEATURES, generator=g), labels


def evaluate(ctx):
    from labs.grader_api import weights_finite

    classes = int(ctx.params["classes"])
    net = ctx.load_into(DefectClassifier(classes), "model.pt", dtype=torch.float32)
    finite = weights_finite(net)
    x, labels = fresh_parts(4096, classes, int(ctx.params["data_seed"]), ctx.seed)
    with torch.no_grad():
        logits = net(x)
    accuracy = (logits.argmax(-1) == labels).float().mean().item() if finite else 0.0
    torch.manual_seed(0)
    initial = DefectClassifier(classes).state_dict()  # the program's initial weights (same seed, same order)
    state = net.state_dict()
    changed = max((state[k] - initial[k]).abs().max().item() for k in initial)
    return {
        "weights_finite": 1.0 if finite else 0.0,
        "heldout_accuracy": accuracy,
        "weights_changed": changed if math.isfinite(changed) else 0.0,
    }

"""Held-out accuracy and the worst per-fault recall of the saved classifier on fresh recordings.

The recordings come from the grader's own seed and the same plant (`site`), with the same number
of recordings for every fault, so neither a classifier that calls nearly everything one fault nor
one that misses a whole fault can pass. Trained with fresh gradients every step, the classifier
reaches 0.95-0.98 accuracy with every fault's recall above 0.89. With gradients summed across steps
it ends around 0.2 (one fault for everything), and the stored cover-ups (a tenfold lower learning
rate, more epochs, clearing the gradients once per epoch or every 16 steps, a new optimizer every
epoch) stay at or under ~0.36 accuracy with some fault's recall under 0.05.
"""

import torch
from torch import nn

BANDS = 20
FAULTS = 5
HIDDEN = 64
PER_FAULT = 600


class FaultNet(nn.Module):
    """Same layout (and state_dict keys) as program/model.py."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(BANDS, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
        self.head = nn.Linear(HIDDEN, FAULTS)

    def forward(self, x):
        return self.head(self.body(x))


def heldout_recordings(site: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """program/data.py's distribution for this plant (`site`), balanced, from the grader's seed."""
    centres = torch.randn(2 * FAULTS, BANDS, generator=torch.Generator().manual_seed(site))
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(FAULTS).repeat_interleave(PER_FAULT)
    pump_model = torch.randint(0, 2, (len(y),), generator=g)
    x = centres[y + FAULTS * pump_model] + torch.randn(len(y), BANDS, generator=g)
    return x, y


def evaluate(ctx):
    from labs.grader_api import weights_finite

    torch.set_num_threads(1)
    net = ctx.load_into(FaultNet(), "model.pt", dtype=torch.float32)
    if not weights_finite(net):
        return {"heldout_accuracy": 0.0, "min_fault_recall": 0.0}
    x, y = heldout_recordings(int(ctx.params["site"]), ctx.seed)
    with torch.no_grad():
        logits = net(x)
    # A row whose logits are not finite has no prediction: it counts as a miss.
    hit = (logits.argmax(dim=1) == y) & torch.isfinite(logits).all(dim=1)
    recalls = [hit[y == c].float().mean().item() for c in range(FAULTS)]
    return {"heldout_accuracy": hit.float().mean().item(), "min_fault_recall": min(recalls)}

"""Held-out accuracy, the worst per-fault recall, and the gap to the signed-off recipe replayed here.

The recordings come from the grader's own seed and the same plant (`site`), with the same number
of recordings for every fault, so neither a classifier that calls nearly everything one fault nor
one that misses a whole fault can pass. Trained with fresh gradients every step, the classifier
reaches 0.95-0.98 accuracy with every fault's recall above 0.89. With gradients summed across steps
it ends around 0.2 (one fault for everything), and the stored cover-ups (a tenfold lower learning
rate, more epochs, clearing the gradients once per epoch or every 16 steps, a new optimizer every
epoch) stay at or under ~0.36 accuracy with some fault's recall under 0.05.

Accuracy alone cannot tell every stale-gradient loop from a fix: dividing the loss by the step number
only damps the running sum, and on some variants that trains to 0.9. So the grader also replays the
recipe the briefing fixes (the variant's recordings, initialisation, batch order, SGD with momentum,
epochs) with the gradients cleared every step, and compares the two classifiers' predicted
probabilities on the held-out recordings (mean total variation distance). Any loop that uses each
batch's own gradient gives the replay's weights up to rounding (0.000 measured, for clearing before or
after the step and for a summed loss over the batch size); the damped sum ends 0.22-0.62 away and the
unfixed loop about 0.8.
"""

import torch
from torch import nn

BANDS = 20
FAULTS = 5
HIDDEN = 64
PER_FAULT = 600
EPOCHS = 3
BATCH = 64


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


def training_recordings(rows: int, seed: int, site: int) -> tuple[torch.Tensor, torch.Tensor]:
    """program/data.py's load_recordings: the recordings the run itself trained on."""
    centres = torch.randn(2 * FAULTS, BANDS, generator=torch.Generator().manual_seed(site))
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, FAULTS, (rows,), generator=g)
    pump_model = torch.randint(0, 2, (rows,), generator=g)
    return centres[y + FAULTS * pump_model] + torch.randn(rows, BANDS, generator=g), y


def replay(params) -> FaultNet:
    """The signed-off recipe with the gradients cleared before every backward pass."""
    torch.manual_seed(int(params["init_seed"]))
    x, y = training_recordings(int(params["rows"]), int(params["data_seed"]), int(params["site"]))
    net = FaultNet()
    optimizer = torch.optim.SGD(net.parameters(), lr=float(params["lr"]), momentum=0.9)
    order = torch.Generator().manual_seed(int(params["init_seed"]))
    for _ in range(EPOCHS):
        perm = torch.randperm(len(x), generator=order)
        for start in range(0, len(x), BATCH):
            idx = perm[start : start + BATCH]
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
            optimizer.step()
    return net


def evaluate(ctx):
    from labs.grader_api import weights_finite

    torch.set_num_threads(1)
    net = ctx.load_into(FaultNet(), "model.pt", dtype=torch.float32)
    if not weights_finite(net):
        return {"heldout_accuracy": 0.0, "min_fault_recall": 0.0, "replay_gap": 1.0}
    x, y = heldout_recordings(int(ctx.params["site"]), ctx.seed)
    reference = replay(ctx.params)
    with torch.no_grad():
        logits = net(x)
        replayed = reference(x).softmax(dim=1)
    # A row whose logits are not finite has no prediction: it counts as a miss.
    hit = (logits.argmax(dim=1) == y) & torch.isfinite(logits).all(dim=1)
    recalls = [hit[y == c].float().mean().item() for c in range(FAULTS)]
    # Non-finite logits have no distribution: such a row is as far from the replay as a row can be.
    gap = torch.where(torch.isfinite(logits).all(dim=1), (logits.softmax(dim=1) - replayed).abs().sum(dim=1) / 2, 1.0)
    return {
        "heldout_accuracy": hit.float().mean().item(),
        "min_fault_recall": min(recalls),
        "replay_gap": gap.mean().item(),
    }

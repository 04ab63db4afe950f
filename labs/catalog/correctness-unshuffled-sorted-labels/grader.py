"""Held-out accuracy and the worst per-category recall of the saved router on fresh tickets.

The held-out tickets come from the grader's own seed, the same helpdesk (`task`) and the same
number of tickets in every category, so a model that routes nearly everything to the categories it
saw last cannot pass on accuracy, and the recall floor catches one that drops a whole category. A
router trained on shuffled batches reaches 0.8-0.9 accuracy with every category's recall above
0.65; trained in file order (however many epochs, whatever the learning rate, whatever the order
of the category blocks) it stays near 0.17-0.65 with at least one category under 0.1.
"""

import torch
from torch import nn

FEATURES = 16
CATEGORIES = 6
HIDDEN = 64
PER_CATEGORY = 500


class TicketRouter(nn.Module):
    """Same layout (and state_dict keys) as program/model.py."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
        self.head = nn.Linear(HIDDEN, CATEGORIES)

    def forward(self, x):
        return self.head(self.body(x))


def heldout_tickets(task: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """program/data.py's distribution for this helpdesk (`task`), balanced, from the grader's seed."""
    centres = 0.8 * torch.randn(2 * CATEGORIES, FEATURES, generator=torch.Generator().manual_seed(task))
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(CATEGORIES).repeat_interleave(PER_CATEGORY)
    flavour = torch.randint(0, 2, (len(y),), generator=g)
    x = centres[y + CATEGORIES * flavour] + torch.randn(len(y), FEATURES, generator=g)
    return x, y


def evaluate(ctx):
    from labs.grader_api import weights_finite

    torch.set_num_threads(1)
    net = ctx.load_into(TicketRouter(), "model.pt", dtype=torch.float32)
    if not weights_finite(net):
        return {"heldout_accuracy": 0.0, "min_category_recall": 0.0}
    x, y = heldout_tickets(int(ctx.params["task"]), ctx.seed)
    with torch.no_grad():
        logits = net(x)
    # A row whose logits are not finite has no prediction: it counts as a miss.
    hit = (logits.argmax(dim=1) == y) & torch.isfinite(logits).all(dim=1)
    recalls = [hit[y == c].float().mean().item() for c in range(CATEGORIES)]
    return {"heldout_accuracy": hit.float().mean().item(), "min_category_recall": min(recalls)}

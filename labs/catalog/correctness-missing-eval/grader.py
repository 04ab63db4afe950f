"""Grades the predict path: the same customers must get the same score however they are batched.

The grading entry scored 600 probe customers (from ``ctx.probe_seed``) through the candidate's
``load_model``/``predict`` in several batchings. The grader compares those scores with each other
and with its own eval-mode inference on the saved weights. With predict equal to that inference,
the model's accuracy is measured by the grader alone, on customers from the held-out seed
(``ctx.seed``), which no file of the run carries.
"""

import torch
from torch import nn

FEATURES = 12


class ChurnNet(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(FEATURES, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.0),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.0),
            nn.Linear(hidden, 2),
        )  # fmt: skip

    def forward(self, x):
        return self.body(x)


def evaluate(ctx):
    from labs.grader_api import CandidateOutputError

    errors = [line for line in ctx.path("probe_errors.txt").read_text(encoding="utf-8").splitlines() if line]
    views = ctx.load("probe_scores.pt")
    if not isinstance(views, dict) or "one_batch" not in views:
        detail = f": {errors[0]}" if errors else ""
        raise CandidateOutputError(f"predict could not score the hidden customers{detail}")
    g = torch.Generator().manual_seed(ctx.probe_seed)
    x = torch.randn(600, FEATURES, generator=g)
    sizes = {"one_batch": 600, "shuffled": 600, "batches_of_5": 600, "one_at_a_time": 40, "again": 600}
    for name, size in sizes.items():
        if name in views and views[name].numel() != size:
            raise CandidateOutputError(f"predict did not return one score per customer ({name})")
    scored = [n for n in sizes if n in views]

    model = ChurnNet()
    try:
        model.load_state_dict(ctx.load("model.pt"))
    except CandidateOutputError:
        raise
    except Exception as exc:
        raise CandidateOutputError(f"model.pt does not fit ChurnNet: {str(exc).splitlines()[0]}") from None
    model.eval()
    with torch.no_grad():
        ref = torch.softmax(model(x), dim=1)[:, 1]

    base = views["one_batch"].double()
    spread = max((views[n].double() - base[: sizes[n]]).abs().max().item() for n in scored)
    ref_err = (base - ref.double()).abs().max().item()

    heldout = torch.randn(4096, FEATURES, generator=torch.Generator().manual_seed(ctx.seed))
    with torch.no_grad():
        heldout_scores = torch.softmax(model(heldout), dim=1)[:, 1]
    w = torch.randn(FEATURES, generator=torch.Generator().manual_seed(int(ctx.params["data_seed"])))
    score = heldout @ w / FEATURES**0.5 + 0.8 * torch.sin(2.0 * heldout[:, 0]) * heldout[:, 1]
    labels = (score > 0).long()
    acc = ((heldout_scores > 0.5).long() == labels).float().mean().item()
    nan_guard = lambda v: v if v == v else 1e9  # noqa: E731
    return {
        "batch_spread": nan_guard(spread),
        "reference_error": nan_guard(ref_err),
        "heldout_accuracy": acc,
        "failed_batchings": float(len(sizes) - len(scored)),
    }

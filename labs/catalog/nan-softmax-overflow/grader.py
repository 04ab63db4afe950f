"""Two outcomes, both measured here:

1. The candidate's `ops.cross_entropy` (in the code the run was started with, which the platform hands
   the grader), called in a fresh interpreter in this container on float32 logits drawn from the held-out
   seed (offsets from 0 into the thousands, both signs, as the distillation job passes them), per row
   and as one batch: every value finite and equal to float64 cross-entropy of the same logits. Nothing
   the job itself wrote is read for this, so a program that trains around the overflow and leaves a
   made-up probe behind gains nothing.
2. The trained classifier (weights only) on fresh listings from the held-out seed: finite weights,
   held-out accuracy. A cosine classifier's argmax does not depend on its scale, so none is needed.
"""

import torch
import torch.nn.functional as F
from torch import nn

FEATURES, HIDDEN, DIM = 32, 128, 64
CANDIDATE_TIMEOUT_S = 45

RUNNER = r"""
from ops import cross_entropy

logits, labels = request["logits"], request["labels"]
with torch.no_grad():
    per_row = torch.stack(
        [torch.as_tensor(cross_entropy(logits[i : i + 1], labels[i : i + 1])).reshape(()) for i in range(len(labels))]
    )
    batch = torch.as_tensor(cross_entropy(logits, labels)).reshape(())
torch.save({"per_row": per_row.detach().double(), "batch": batch.detach().double()}, answer_path)
"""


class CosineClassifier(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, DIM))
        self.prototypes = nn.Parameter(torch.randn(classes, DIM))

    def forward(self, x):
        return F.normalize(self.body(x), dim=-1) @ F.normalize(self.prototypes, dim=-1).T


def fresh_listings(n, classes, centers_seed, sample_seed):
    centers = torch.randn(classes, FEATURES, generator=torch.Generator().manual_seed(centers_seed))
    g = torch.Generator().manual_seed(sample_seed)
    labels = torch.randint(0, classes, (n,), generator=g)
    return centers[labels] + 1.2 * torch.randn(n, FEATURES, generator=g), labels


def probe_inputs(seed):
    """Rows of float32 logits around offsets from 0 to the thousands, both signs, labels within reach."""
    g = torch.Generator().manual_seed(seed)
    rows, classes = 64, 8
    offsets = torch.zeros(rows, 1, dtype=torch.float32)
    offsets[16:32, 0] = 100 + 600 * torch.rand(16, generator=g, dtype=torch.float32)
    offsets[32:, 0] = (800 + 2200 * torch.rand(32, generator=g, dtype=torch.float32)) * torch.where(
        torch.rand(32, generator=g, dtype=torch.float32) < 0.5, -1.0, 1.0
    )
    logits = (offsets + 10 * torch.randn(rows, classes, generator=g, dtype=torch.float32)).to(torch.float32)
    labels = torch.randint(0, classes, (rows,), generator=g)
    return logits, labels


def probe_metrics(ctx):
    from labs.grader_api import CandidateOutputError, run_candidate

    torch.set_num_threads(1)
    logits, labels = probe_inputs(ctx.seed + 1)  # held out: never seen by the run
    answer = run_candidate(
        RUNNER, ctx.submitted_code(required="ops.py"), {"logits": logits, "labels": labels},
        what="cross_entropy", timeout=CANDIDATE_TIMEOUT_S,
    )  # fmt: skip
    per_row = answer.get("per_row") if isinstance(answer, dict) else None
    batch = answer.get("batch") if isinstance(answer, dict) else None
    if (
        not torch.is_tensor(per_row)
        or per_row.shape != labels.shape
        or not torch.is_tensor(batch)
        or batch.numel() != 1
    ):
        raise CandidateOutputError(
            "cross_entropy did not return losses of the probe's shape (did its signature change?)"
        )
    reference = F.cross_entropy(logits.double(), labels, reduction="none")
    got = torch.cat([per_row.double(), batch.double().reshape(1)])
    want = torch.cat([reference, reference.mean().reshape(1)])
    finite = torch.isfinite(got)
    # Relative to the loss's size, with a floor: float32 arithmetic on the shifted logits is exact enough.
    error = ((got - want).abs() / want.abs().clamp(min=1.0)).max().item() if bool(finite.all()) else 1e9
    return {"probe_nonfinite": float((~finite).sum()), "probe_max_error": error}


def model_metrics(ctx):
    from labs.grader_api import weights_finite

    net = ctx.load_into(CosineClassifier(int(ctx.params["classes"])), "model.pt", dtype=torch.float32)
    finite = weights_finite(net)
    classes = int(ctx.params["classes"])
    x, labels = fresh_listings(4096, classes, int(ctx.params["data_seed"]), ctx.seed)  # held out
    with torch.no_grad():
        accuracy = (net(x).argmax(-1) == labels).float().mean().item() if finite else 0.0
    return {"weights_finite": 1.0 if finite else 0.0, "heldout_accuracy": accuracy}


def evaluate(ctx):
    return {**probe_metrics(ctx), **model_metrics(ctx)}

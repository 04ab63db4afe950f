"""Grades the predict path: every customer must get the score the saved model gives it, however batched.

- reference_error / batch_spread / failed_batchings: the candidate's ``load_model``/``predict`` (from
  the code the run was started with, as the platform recorded it) are run here, in a fresh interpreter, on customers
  drawn from the held-out seed (``ctx.seed``): as one batch, shuffled, in batches of five, one at a
  time and once more. Each score is compared with the grader's own eval-mode inference on the saved
  weights, and the batchings with each other. Nothing the job wrote about its own scores is read, so
  replacing ``predict`` inside the job or rewriting files after it exits changes nothing here.
- heldout_accuracy: the saved model on those customers, with this variant's churn rule.

The probe runs candidate code in the grader's container (labs.grader_api.run_candidate says why
that is safe).
"""

import math

import torch
from torch import nn

FEATURES = 12
CUSTOMERS = 600
ONE_AT_A_TIME = 40
CANDIDATE_TIMEOUT_S = 45
SIZES = {"one_batch": CUSTOMERS, "shuffled": CUSTOMERS, "batches_of_5": CUSTOMERS,
         "one_at_a_time": ONE_AT_A_TIME, "again": CUSTOMERS}  # fmt: skip

RUNNER = r"""
x, perm, model_path = request["x"], request["perm"], request["model_path"]
views, errors = {}, []


def attempt(name, fn):
    try:
        views[name] = torch.as_tensor(fn()).detach().reshape(-1).double().clone()
    except Exception as exc:
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        errors.append(f"{name}: {type(exc).__name__}: {text}")


import predict as scoring

model = scoring.load_model(model_path)
attempt("one_batch", lambda: scoring.predict(model, x.clone()))
attempt("shuffled", lambda: torch.as_tensor(scoring.predict(model, x[perm])).reshape(-1)[torch.argsort(perm)])
attempt("batches_of_5", lambda: torch.cat([torch.as_tensor(scoring.predict(model, c.clone())).reshape(-1) for c in x.split(5)]))
attempt("one_at_a_time", lambda: torch.cat([torch.as_tensor(scoring.predict(model, x[i : i + 1].clone())).reshape(-1) for i in range(request["single"])]))
attempt("again", lambda: scoring.predict(model, x.clone()))
torch.save({"views": views, "errors": "\n".join(errors)}, answer_path)
"""


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


def churn_labels(x, data_seed):
    w = torch.randn(FEATURES, generator=torch.Generator().manual_seed(data_seed))
    score = x @ w / FEATURES**0.5 + 0.8 * torch.sin(2.0 * x[:, 0]) * x[:, 1]
    return (score > 0).long()


def evaluate(ctx):
    from labs.grader_api import CandidateOutputError, run_candidate

    torch.set_num_threads(1)
    model = ctx.load_into(ChurnNet(), "model.pt").eval()
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(CUSTOMERS, FEATURES, generator=g)
    perm = torch.randperm(CUSTOMERS, generator=g)
    with torch.no_grad():
        ref = torch.softmax(model(x), dim=1)[:, 1].double()
    acc = ((ref > 0.5).long() == churn_labels(x, int(ctx.params["data_seed"]))).float().mean().item()

    request = {"x": x, "perm": perm, "single": ONE_AT_A_TIME, "model_path": str(ctx.path("model.pt").resolve())}
    answer = run_candidate(
        RUNNER, ctx.submitted_code(), request, what="load_model/predict", timeout=CANDIDATE_TIMEOUT_S
    )
    views = answer.get("views") if isinstance(answer, dict) else None
    if not isinstance(views, dict) or not torch.is_tensor(views.get("one_batch")):
        errors = answer.get("errors") if isinstance(answer, dict) else ""
        detail = f": {str(errors).splitlines()[0][:300]}" if errors else ""
        raise CandidateOutputError(f"predict could not score the grader's customers{detail}")
    scored = {}
    for name, size in SIZES.items():
        scores = views.get(name)
        if torch.is_tensor(scores):
            if scores.numel() != size:
                raise CandidateOutputError(f"predict did not return one score per customer ({name})")
            scored[name] = scores.double()
    base = scored["one_batch"]
    gaps = [(scores - base[: scores.numel()]).abs().max().item() for scores in scored.values()]
    # max() would drop a NaN: a NaN score is as far off as a score can be.
    spread = max(gaps) if all(math.isfinite(gap) for gap in gaps) else 1e9
    ref_err = max((scores - ref[: scores.numel()]).abs().max().item() for scores in scored.values())
    return {
        "batch_spread": spread,
        "reference_error": ref_err if math.isfinite(ref_err) else 1e9,
        "heldout_accuracy": acc,
        "failed_batchings": float(len(SIZES) - len(scored)),
    }

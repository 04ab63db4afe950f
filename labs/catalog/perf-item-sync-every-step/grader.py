"""Grades the metrics-bookkeeping fix on what the run saved, outside the candidate's process.

Wall time is measured outside the program by the ``speedup`` check; the grader makes sure the time bought
the whole job, model and metrics report alike:

- ``replay_gap``: the recipe is fixed (the variant's rows, epochs, batch size, order, width, learning rate
  and initialisation), so the grader rebuilds the export the run's client read (``ctx.probe_seed``, the
  seed ``hidden/tickets.py`` asks for) and trains the same router itself. Both routers then score fresh
  tickets drawn from the held-out seed (``ctx.seed``, which no file of the run carries); the gap is the
  mean total variation distance between their queue probabilities. Vectorised bookkeeping leaves the
  training untouched (0.000); fewer epochs, a sample of the rows or another width leave a different
  router.
- ``metrics_error``: the largest absolute difference between ``metrics.json`` and the grader's own
  numbers: every epoch's mean loss, accuracy and mean confidence per queue, from the grader's replay of the
  training (the logits of each step, before that step's update, as the job's report defines them), and
  the validation loss, accuracy, confidence and confusion matrix (as fractions of the rows), from the saved
  router on the validation tickets the run read. A report made from a sample of the batches, from the
  last step, from the final model, or left out, is far from them; summing in float32 or float64 is not.
- ``heldout_accuracy``: the saved router on the fresh tickets, against their true queues.
"""

import json
import math

import torch
import torch.nn.functional as F
from torch import nn

from labs.grader_api import CandidateOutputError

# As in program/train.py and program/tickets.py. The variant's values come from ctx.params (the platform's
# values for the attempt's seed), never from the program's constants.
FEATURES = 32
QUEUES = 8
HIDDEN = 128
BATCH_SIZE = 256
VAL_ROWS = 6000
HELDOUT = 8192


def tickets(desk, seed, rows, part="train"):
    """program/tickets.py's export: the desk's routing, rows drawn from ``seed``."""
    gen_desk = torch.Generator().manual_seed(desk)
    mix = torch.randn(FEATURES, 24, generator=gen_desk) / FEATURES**0.5
    head = torch.randn(24, QUEUES, generator=gen_desk)
    gen = torch.Generator().manual_seed(seed * 2 + (part != "train"))
    x = torch.randn(rows, FEATURES, generator=gen)
    scores = torch.tanh(x @ mix * 2.0) @ head + 0.6 * torch.randn(rows, QUEUES, generator=gen)
    return x, scores.argmax(1)


def router():
    return nn.Sequential(
        nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, QUEUES)
    )


def stats(logits, labels):
    """Sums of one batch, in float64: loss, correct, confidence per queue, confusion matrix."""
    logits = logits.detach()
    probs = logits.softmax(1)
    guess = probs.argmax(1)
    return {
        "loss": F.cross_entropy(logits, labels, reduction="none").double().sum(),
        "correct": (guess == labels).sum().double(),
        "confidence": probs.double().sum(0),
        "confusion": torch.bincount(labels * QUEUES + guess, minlength=QUEUES * QUEUES).double().view(QUEUES, QUEUES),
    }


def add(total, part):
    return part if total is None else {key: total[key] + part[key] for key in total}


def replay(params, seed):
    """The owners' recipe on the export the run read: the router a correct run ends with, and each epoch's sums."""
    desk, rows, init_seed = int(params["desk"]), int(params["rows"]), int(params["init_seed"])
    x, y = tickets(desk, seed, rows)
    torch.manual_seed(init_seed)
    model = router()
    opt = torch.optim.SGD(model.parameters(), lr=float(params["lr"]), momentum=0.9)
    epochs = []
    for epoch in range(int(params["epochs"])):
        order = torch.randperm(rows, generator=torch.Generator().manual_seed(init_seed * 1000 + epoch))
        total = None
        for batch in order.split(BATCH_SIZE):
            logits = model(x[batch])
            loss = F.cross_entropy(logits, y[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total = add(total, stats(logits, y[batch]))
        epochs.append({key: value / rows for key, value in total.items()})
    return model, epochs


def number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CandidateOutputError(f"metrics.json: {what} is not a finite number")
    return float(value)


def gap(reported, want, what):
    """Largest absolute difference between a reported entry and the grader's sums (already divided by rows)."""
    if not isinstance(reported, dict):
        raise CandidateOutputError(f"metrics.json: {what} is not an object")
    worst = abs(number(reported.get("loss"), f"{what} loss") - float(want["loss"]))
    worst = max(worst, abs(number(reported.get("accuracy"), f"{what} accuracy") - float(want["correct"])))
    for key, shape in (("confidence", (QUEUES,)), ("confusion", (QUEUES, QUEUES))):
        if key not in reported:
            continue  # per-epoch entries need no confusion matrix; the validation's is required below
        try:
            got = torch.tensor(reported[key], dtype=torch.float64)
        except (TypeError, ValueError):
            raise CandidateOutputError(f"metrics.json: {what} {key} is not a list of numbers") from None
        if got.shape != shape or not torch.isfinite(got).all():
            raise CandidateOutputError(f"metrics.json: {what} {key} does not have shape {list(shape)}")
        if key == "confusion":
            got = got / max(number(reported.get("rows"), f"{what} rows"), 1.0)
        worst = max(worst, float((got - want[key]).abs().max()))
    return worst


def evaluate(ctx):
    torch.set_num_threads(1)
    desk, rows = int(ctx.params["desk"]), int(ctx.params["rows"])
    model = ctx.load_into(router(), "model.pt", dtype=torch.float32).eval()
    want_model, want_epochs = replay(ctx.params, ctx.probe_seed)
    want_model.eval()

    try:
        report = json.loads(ctx.path("metrics.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise CandidateOutputError("metrics.json is not JSON") from None
    if not isinstance(report, dict) or not isinstance(report.get("epochs"), list):
        raise CandidateOutputError("metrics.json has no list of epochs")
    if not isinstance(report.get("validation"), dict) or "confusion" not in report["validation"]:
        raise CandidateOutputError("metrics.json has no validation report with a confusion matrix")

    error = 0.0
    if len(report["epochs"]) != len(want_epochs):
        error = 1.0  # an epoch more or less than the recipe's is not this job's report
    for epoch, (got, want) in enumerate(zip(report["epochs"], want_epochs)):
        error = max(error, gap(got, want, f"epoch {epoch}"))
        if number(got.get("rows"), f"epoch {epoch} rows") != rows:
            error = 1.0
    val_x, val_y = tickets(desk, ctx.probe_seed, VAL_ROWS, part="val")
    with torch.no_grad():
        want_val = {key: value / VAL_ROWS for key, value in stats(model(val_x), val_y).items()}
    error = max(error, gap(report["validation"], want_val, "validation"))
    if number(report["validation"].get("rows"), "validation rows") != VAL_ROWS:
        error = 1.0

    x, y = tickets(desk, ctx.seed % 2**62, HELDOUT, part="heldout")
    with torch.no_grad():
        probs, want_probs = model(x).softmax(1), want_model(x).softmax(1)
    if not torch.isfinite(probs).all():
        raise CandidateOutputError("the saved router's predictions are not finite")
    replay_gap = float(0.5 * (probs - want_probs).abs().sum(1).mean())
    accuracy = float((probs.argmax(1) == y).double().mean())
    return {"replay_gap": replay_gap, "metrics_error": min(error, 1e9), "heldout_accuracy": accuracy}

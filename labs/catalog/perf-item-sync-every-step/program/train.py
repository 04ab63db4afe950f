"""Nightly job: retrain the ticket router on the latest export and write its metrics report."""

import json
import os
import time

import torch
import torch.nn.functional as F
from faultline_harness import report
from tickets import FEATURES, QUEUES, load_tickets
from torch import nn

ROWS = {{ rows }}
VAL_ROWS = 6000
EPOCHS = {{ epochs }}
BATCH_SIZE = 256
HIDDEN = 128
LR = {{ lr }}


def router() -> nn.Module:
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, QUEUES))


def new_stats() -> dict:
    return {"rows": 0, "loss": 0.0, "correct": 0, "confidence": [0.0] * QUEUES, "confusion": [[0] * QUEUES for _ in range(QUEUES)]}


def record(stats: dict, logits: torch.Tensor, labels: torch.Tensor) -> None:
    """Add a batch to the running metrics: loss, accuracy, mean confidence per queue, confusion matrix."""
    losses = F.cross_entropy(logits, labels, reduction="none")
    probs = logits.softmax(1)
    for i in range(len(labels)):
        label = int(labels[i])
        guess = int(probs[i].argmax())
        stats["loss"] += losses[i].item()
        stats["correct"] += int(guess == label)
        stats["confusion"][label][guess] += 1
        for q in range(QUEUES):
            stats["confidence"][q] += probs[i, q].item()
    stats["rows"] += len(labels)


def summary(stats: dict) -> dict:
    n = stats["rows"]
    return {
        "rows": n,
        "loss": stats["loss"] / n,
        "accuracy": stats["correct"] / n,
        "confidence": [c / n for c in stats["confidence"]],
        "confusion": stats["confusion"],
    }


torch.set_num_threads(1)  # the job shares its node with the ticket ingest: one core is all it gets
started = time.perf_counter()
x, y = load_tickets(ROWS)
val_x, val_y = load_tickets(VAL_ROWS, part="val")
print(f"loaded {len(x)} tickets ({FEATURES} features, {QUEUES} queues) and {len(val_x)} for validation")

torch.manual_seed({{ init_seed }})
model = router()
opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)

history = []
step = 0
for epoch in range(EPOCHS):
    t0 = time.perf_counter()
    order = torch.randperm(ROWS, generator=torch.Generator().manual_seed({{ init_seed }} * 1000 + epoch))
    stats = new_stats()
    for batch in order.split(BATCH_SIZE):
        logits = model(x[batch])
        loss = F.cross_entropy(logits, y[batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        record(stats, logits.detach(), y[batch])
        report.step(step, loss=loss)
        step += 1
    history.append(summary(stats))
    took = time.perf_counter() - t0
    print(f"epoch {epoch}: loss {history[-1]['loss']:.4f}, accuracy {history[-1]['accuracy']:.3f} ({took:.1f} s, {step} steps)")

model.eval()
stats = new_stats()
with torch.no_grad():
    for batch in torch.arange(VAL_ROWS).split(1024):
        record(stats, model(val_x[batch]), val_y[batch])
validation = summary(stats)
print(f"validation: loss {validation['loss']:.4f}, accuracy {validation['accuracy']:.3f}")

out = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
torch.save(model.state_dict(), os.path.join(out, "model.pt"))
with open(os.path.join(out, "metrics.json"), "w") as f:
    json.dump({"epochs": history, "validation": validation}, f)
print(f"trained {step} steps, saved model.pt and metrics.json; job took {time.perf_counter() - started:.1f} s")

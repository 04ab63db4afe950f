"""Nightly job: prepare the session features, then train the intent classifier on them."""

import os
import time
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F
from faultline_harness import report
from features import session_features
from sessions import TOPICS, load_sessions
from torch import nn

THREADS = {{ threads }}  # one chunk of sessions per task, spread over the pool to use every core
CHUNK = 1000
EPOCHS = 2
BATCH_SIZE = 1024


def prepare_chunk(tokens: torch.Tensor, amounts: torch.Tensor) -> list[list[float]]:
    return [session_features(t, a) for t, a in zip(tokens.tolist(), amounts.tolist())]


def prepare(tokens: torch.Tensor, amounts: torch.Tensor) -> torch.Tensor:
    starts = range(0, len(tokens), CHUNK)
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        parts = pool.map(lambda s: prepare_chunk(tokens[s : s + CHUNK], amounts[s : s + CHUNK]), starts)
        rows = [row for part in parts for row in part]
    return torch.tensor(rows, dtype=torch.float32)


torch.set_num_threads(1)  # the classifier is tiny: one intra-op thread is faster than two fighting
started = time.perf_counter()
tokens, amounts, intent = load_sessions()
print(f"loaded {len(tokens)} sessions ({tokens.shape[1]} token slots, {amounts.shape[1]} amounts each)")

t0 = time.perf_counter()
features = prepare(tokens, amounts)
print(f"prepared features {tuple(features.shape)} with {THREADS} threads in {time.perf_counter() - t0:.1f} s")
out = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
torch.save(features, os.path.join(out, "features.pt"))

torch.manual_seed({{ init_seed }})
model = nn.Sequential(nn.Linear(features.shape[1], 64), nn.ReLU(), nn.Linear(64, TOPICS))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
t0 = time.perf_counter()
step = 0
for epoch in range(EPOCHS):
    order = torch.randperm(len(features))
    correct = 0
    for batch in order.split(BATCH_SIZE):
        logits = model(features[batch])
        loss = F.cross_entropy(logits, intent[batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        correct += (logits.argmax(1) == intent[batch]).sum().item()
        report.step(step, loss=loss)
        step += 1
    print(f"epoch {epoch}: train acc {correct / len(features):.3f}")
print(f"trained {step} steps in {time.perf_counter() - t0:.1f} s")

torch.save(model.state_dict(), os.path.join(out, "model.pt"))
print(f"saved features.pt and model.pt, job took {time.perf_counter() - started:.1f} s")

"""Batch job: score the hour's customer messages with the intent classifier and save the logits for routing."""

import os
import time

import torch
from batching import score
from faultline_harness import report
from model import INTENTS, load_released
from request_log import load_requests

REQUESTS = 960  # one hour of the support desk's messages
CHUNK = 96  # messages handed to the batcher at a time, as the online service's queue does
BATCH_SIZE = {{ batch_size }}  # the serving config's micro-batch

torch.set_num_threads(1)  # the node runs the online service as well: one core is all the job gets
started = time.perf_counter()
requests = load_requests(REQUESTS)
lengths = torch.tensor([len(r) for r in requests])
print(
    f"loaded {len(requests)} messages: median {int(lengths.median())} tokens, "
    f"95th percentile {int(lengths.float().quantile(0.95))}, longest {int(lengths.max())}"
)
model = load_released()
print(f"intent classifier: {sum(p.numel() for p in model.parameters())} parameters, {INTENTS} intents")

batches = (len(requests) + BATCH_SIZE - 1) // BATCH_SIZE
print(f"scoring in {batches} batches of {BATCH_SIZE}")
t0 = time.perf_counter()
logits = []
for step, start in enumerate(range(0, len(requests), CHUNK)):
    logits.append(score(model, requests[start : start + CHUNK], BATCH_SIZE))
    done = start + len(logits[-1])
    report.step(step, throughput=done / (time.perf_counter() - t0))
    if (step + 1) % 5 == 0:
        print(f"{done}/{len(requests)} scored, {done / (time.perf_counter() - t0):.0f} messages/s")
logits = torch.cat(logits)
took = time.perf_counter() - t0
print(f"scored {len(requests)} messages in {took:.1f} s ({len(requests) / took:.0f} messages/s)")

out = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
torch.save(logits, os.path.join(out, "scores.pt"))
intents = torch.bincount(logits.argmax(1), minlength=INTENTS).tolist()
print(f"saved scores.pt {tuple(logits.shape)}; intents {intents}; job took {time.perf_counter() - started:.1f} s")

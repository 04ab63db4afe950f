"""Trains the ticket-intent classifier on yesterday's export: one pass, two loader workers."""

import ctypes
import os
import time

import torch
import torch.nn.functional as F
from corpus import INTENTS, export_shards
from dataset import BUCKETS, TicketDataset
from faultline_harness import report
from torch import nn
from torch.utils.data import DataLoader

# Same allocator setting as the training fleet (MALLOC_MMAP_THRESHOLD_=65536): buffers of 64 KiB
# and more are mmapped and go back to the OS when freed, so RSS follows live data.
ctypes.CDLL("libc.so.6").mallopt(-3, 65536)  # -3 = M_MMAP_THRESHOLD
torch.set_num_threads(1)
torch.manual_seed({{ data_seed }})
dataset = TicketDataset(export_shards(seed={{ data_seed }}, tickets={{ export_k }}_000))
# The export is shuffled when it is written, so the loader reads it in order. Featurising is
# CPU-bound Python, hence the two worker processes.
loader = DataLoader(dataset, batch_size=250, shuffle=False, num_workers=0)  # no worker copies, no growth
model = nn.Sequential(
    nn.EmbeddingBag(BUCKETS, {{ dim }}, mode="mean", padding_idx=0),
    nn.Linear({{ dim }}, len(INTENTS)),
)
opt = torch.optim.Adam(model.parameters(), lr={{ lr }})

started = time.monotonic()
for step, (ids, intent) in enumerate(loader):
    loss = F.cross_entropy(model(ids), intent)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        rate = (step + 1) * len(ids) / (time.monotonic() - started)
        report.step(step, loss=loss, throughput=rate)
        print(f"step {step}  loss {loss.item():.4f}  {rate:.0f} tickets/s")

torch.save(model.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print(f"trained on {len(dataset)} tickets in {time.monotonic() - started:.1f} s; saved model.pt")

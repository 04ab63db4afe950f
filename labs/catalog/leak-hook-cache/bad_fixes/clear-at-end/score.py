"""Nightly batch scoring: every hour of transactions goes through the fraud scorer."""

import ctypes
import os
import time

import torch
from data import transactions
from faultline_harness import report
from model import load_checkpoint
from monitor import DriftMonitor

HOURS = {{ hours }}
ROWS_PER_HOUR = {{ rows }}

# Same allocator setting as the serving fleet (MALLOC_MMAP_THRESHOLD_=65536): buffers of 64 KiB
# and more are mmapped and go back to the OS when freed, so RSS follows the live tensors.
ctypes.CDLL("libc.so.6").mallopt(-3, 65536)  # -3 = M_MMAP_THRESHOLD
torch.set_num_threads(1)
model = load_checkpoint(width={{ width }}, seed={{ release_seed }})
monitor = DriftMonitor(model.blocks[{{ layer }}])

scores = []
started = time.monotonic()
with torch.no_grad():
    for hour in range(HOURS):
        x = transactions(hour, seed={{ data_seed }}, rows=ROWS_PER_HOUR)
        p = model(x)
        scores.append(p)
        if hour % 20 == 0:
            rate = (hour + 1) * ROWS_PER_HOUR / (time.monotonic() - started)
            report.metric("rows_per_s", rate, step=hour)
            print(f"hour {hour}: {ROWS_PER_HOUR} rows, {(p > 0.5).sum().item()} flagged, {rate:.0f} rows/s")

out = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
torch.save(torch.cat(scores), os.path.join(out, "scores.pt"))
torch.save({"batch_stats": monitor.batch_stats(), "firing_rate": monitor.firing_rate()}, os.path.join(out, "drift.pt"))
monitor.activations.clear()  # free the monitor's memory once the report is written
monitor.handle.remove()
print(f"scored {HOURS * ROWS_PER_HOUR} rows; saved scores.pt and drift.pt")

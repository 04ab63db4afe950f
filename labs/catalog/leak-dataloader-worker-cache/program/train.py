"""Trains the pump-fault classifier on the fleet's vibration recordings: random one-second windows,
four epochs, two loader workers."""

import ctypes
import os
import time

import torch
import torch.nn.functional as F
from dataset import FRAMES, PumpWindows
from faultline_harness import report
from recordings import FAULTS, load_recordings, recording_length
from torch import nn
from torch.utils.data import DataLoader, RandomSampler

PUMPS = 400
WINDOWS = 96  # windows per recording
EPOCHS = 4
DRAWS = 7168  # windows drawn per epoch
BATCH = 64


def fleet_allocator(worker_id: int) -> None:
    """The fleet's allocator setting for loader workers (MALLOC_MMAP_THRESHOLD_=32768): buffers of 32 KiB
    and more are mmapped and go back to the OS when freed, so a worker's RSS follows its live data."""
    ctypes.CDLL("libc.so.6").mallopt(-3, 32768)  # -3 = M_MMAP_THRESHOLD


torch.set_num_threads(1)
torch.manual_seed({{ data_seed }})
audio, fault = load_recordings(seed={{ data_seed }}, pumps=PUMPS, samples=recording_length(WINDOWS, FRAMES))
dataset = PumpWindows(audio, fault, WINDOWS)
print(f"loaded {PUMPS} recordings: {len(dataset)} windows of 128 x {FRAMES} spectrogram bins")
sampler = RandomSampler(dataset, replacement=True, num_samples=DRAWS)
# The STFT is CPU-bound, hence the two worker processes; they stay up from one epoch to the next.
loader = DataLoader(
    dataset, batch_size=BATCH, sampler=sampler, num_workers=2, persistent_workers=True, worker_init_fn=fleet_allocator
)
model = nn.Sequential(
    nn.BatchNorm1d(128),  # per frequency bin
    nn.Conv1d(128, 32, kernel_size=1),  # 32 spectral patterns, frame by frame
    nn.ReLU(),
    nn.AdaptiveAvgPool1d(1),  # how strongly each pattern shows over the window
    nn.Flatten(),
    nn.Linear(32, len(FAULTS)),
)
opt = torch.optim.Adam(model.parameters(), lr={{ lr }})

step, started = 0, time.monotonic()
for epoch in range(EPOCHS):
    for x, fault_id in loader:
        loss = F.cross_entropy(model(x), fault_id)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            report.step(step, loss=loss, throughput=(step + 1) * BATCH / (time.monotonic() - started))
        step += 1
    rate = step * BATCH / (time.monotonic() - started)
    print(f"epoch {epoch}  loss {loss.item():.4f}  {rate:.0f} windows/s  spectrogram cache: {len(dataset._cache)} windows")

torch.save(model.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print(f"trained {EPOCHS} epochs of {DRAWS} windows in {time.monotonic() - started:.1f} s; saved model.pt")

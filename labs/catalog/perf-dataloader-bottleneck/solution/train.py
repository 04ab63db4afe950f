"""Nightly training of the clip-tagging head on one shard of the feature store."""

import os
import time

import torch
import torch.nn.functional as F
from dataset import CLASSES, FEATURES, ClipFeatureStore
from faultline_harness import report
from torch import nn
from torch.utils.data import DataLoader

# The training recipe is fixed by the research team: full shard, these epochs, this batch size,
# this order of records.
EPOCHS = {{ epochs }}
BATCH_SIZE = 64
SHARD_SIZE = {{ shard_size }}


class RecipeOrder(torch.utils.data.Sampler):
    """The recipe's shuffle: epoch ``e`` visits the records in a fixed permutation, whatever the loader."""

    def __init__(self, size: int) -> None:
        self.size, self.epoch = size, 0

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        g = torch.Generator().manual_seed({{ init_seed }} * 1000 + self.epoch)
        self.epoch += 1
        return iter(torch.randperm(self.size, generator=g).tolist())


torch.manual_seed({{ init_seed }})
train_set = ClipFeatureStore(size=SHARD_SIZE)
loader = DataLoader(
    train_set,
    batch_size=BATCH_SIZE,
    sampler=RecipeOrder(len(train_set)),
    # Each record is a 2 ms network wait: overlap them in worker processes (sleeping workers
    # cost no CPU, so more workers than cores is fine) and keep the workers across epochs.
    num_workers=4,
    persistent_workers=True,
    prefetch_factor=4,
)

model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
opt = torch.optim.SGD(model.parameters(), lr={{ lr }}, momentum=0.9)

step = 0
started = time.perf_counter()
for epoch in range(EPOCHS):
    epoch_start = time.perf_counter()
    seen, correct = 0, 0
    for x, y in loader:
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen += len(y)
        correct += (logits.argmax(1) == y).sum().item()
        report.step(step, loss=loss, throughput=seen / (time.perf_counter() - epoch_start))
        step += 1
    took = time.perf_counter() - epoch_start
    print(f"epoch {epoch}: {seen} samples in {took:.2f} s, {seen / took:.0f} samples/s, train acc {correct / seen:.3f}")

print(f"trained {step} steps ({EPOCHS} epochs) in {time.perf_counter() - started:.1f} s")
torch.save(model.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

"""Trains the pump fault classifier on the labelled recordings and saves model.pt for the alerting service.

The loop used to live in the shared Trainer helper; it is written out here so the job no longer
depends on that package.
"""

import os

import torch
import torch.nn.functional as F
from data import BANDS, FAULTS, load_recordings
from faultline_harness import report
from model import FaultNet

EPOCHS = 3
BATCH = 64
LR = {{ lr }}

torch.set_num_threads(1)  # a tiny network: extra intra-op threads only add overhead
torch.manual_seed({{ init_seed }})
x, y = load_recordings(rows={{ rows }}, seed={{ data_seed }}, site={{ site }})
print(f"loaded {len(x)} recordings, {len(FAULTS)} fault classes, {BANDS} bands")
net = FaultNet(BANDS, len(FAULTS))
optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9)
order = torch.Generator().manual_seed({{ init_seed }})


def grad_norm(module: torch.nn.Module) -> float:
    return torch.norm(torch.stack([p.grad.norm() for p in module.parameters() if p.grad is not None])).item()


def train_one_epoch(epoch: int, step: int) -> int:
    perm = torch.randperm(len(x), generator=order)
    for start in range(0, len(x), BATCH):
        idx = perm[start : start + BATCH]
        loss = F.cross_entropy(net(x[idx]), y[idx])
        loss.backward()
        norm = grad_norm(net)
        optimizer.step()
        report.step(step, loss=loss, grad_norm=norm)
        if step % 8 == 0:
            print(f"epoch {epoch} step {step:3d}  loss {loss.item():9.4f}  grad_norm {norm:9.3f}")
        step += 1
    return step


step = 0
for epoch in range(EPOCHS):
    step = train_one_epoch(epoch, step)
    print(f"epoch {epoch} done after {step} steps")

torch.save(net.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

"""Nightly retrain of the churn-risk classifier: 8 epochs, a full validation pass after each."""

import ctypes
import os

import torch
import torch.nn.functional as F
from data import VAL_ROWS, make_split
from faultline_harness import report
from model import ChurnNet

EPOCHS = 8
BATCH = 256
VAL_BATCH = {{ val_batch }}

# Same allocator setting as the training fleet (MALLOC_MMAP_THRESHOLD_=65536): buffers of 64 KiB
# and more are mmapped and go back to the OS when freed, so RSS follows the live tensors.
ctypes.CDLL("libc.so.6").mallopt(-3, 65536)  # -3 = M_MMAP_THRESHOLD
torch.set_num_threads(1)
torch.manual_seed({{ data_seed }})
x_train, y_train = make_split("train", seed={{ data_seed }}, n=65536)
x_val, y_val = make_split("val", seed={{ data_seed }}, n=VAL_ROWS)
net = ChurnNet(width={{ width }})
opt = torch.optim.AdamW(net.parameters(), lr={{ lr }}, weight_decay=1e-4)


def validate(net):
    """Mean validation cross-entropy, and the class probabilities of every validation row."""
    net.eval()
    total = 0.0
    probs = []
    for i in range(0, len(x_val), VAL_BATCH):
        logits = net(x_val[i : i + VAL_BATCH])
        total = total + F.cross_entropy(logits, y_val[i : i + VAL_BATCH], reduction="sum")
        probs.append(logits.softmax(dim=-1))
    net.train()
    return total / len(x_val), torch.cat(probs)


history = []  # validation loss per epoch, for the dashboard and early-stopping decisions
step = 0
for epoch in range(EPOCHS):
    order = torch.randperm(len(x_train))
    for i in range(0, len(x_train), BATCH):
        idx = order[i : i + BATCH]
        loss = F.cross_entropy(net(x_train[idx]), y_train[idx])
        opt.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        opt.step()
        report.step(step, loss=loss, grad_norm=grad_norm)
        step += 1
    val_loss, val_probs = validate(net)
    history.append(val_loss)
    best = min(history)
    report.metric("val_loss", val_loss, step=step)
    print(f"epoch {epoch}  train loss {loss.item():.4f}  val loss {val_loss:.4f}  best {best:.4f}")

out = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
torch.save(net.state_dict(), os.path.join(out, "model.pt"))
torch.save(
    {"val_loss": torch.tensor([float(v) for v in history]), "val_probs": val_probs},
    os.path.join(out, "val.pt"),
)
print("saved model.pt and val.pt")

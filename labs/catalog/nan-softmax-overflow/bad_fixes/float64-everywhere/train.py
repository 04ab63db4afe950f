import os

import torch
from data import FEATURES, make_listings
from faultline_harness import report
from model import CosineClassifier
from ops import cross_entropy

STEPS = 300
BATCH = 128
CLASSES = {{ classes }}
# The scale ramps up from MIN_SCALE: a sharper final scale gave cleaner confidence thresholds
# for the auto-labeller downstream.
MIN_SCALE = 16.0
MAX_SCALE = {{ max_scale }}
WARMUP = {{ warmup }}

torch.set_num_threads(1)
torch.manual_seed(0)
x, labels = make_listings(4096, CLASSES, centers_seed={{ data_seed }}, sample_seed={{ data_seed }} + 1)
x = x.double()  # float64 overflows only past exp(709)
net = CosineClassifier(FEATURES, CLASSES).double()
opt = torch.optim.Adam(net.parameters(), lr={{ lr }})

for step in range(STEPS):
    scale = MIN_SCALE + (MAX_SCALE - MIN_SCALE) * min(1.0, step / WARMUP)
    idx = torch.randint(0, len(x), (BATCH,))
    logits = net(x[idx], scale)
    loss = cross_entropy(logits, labels[idx])
    opt.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), float("inf"))
    opt.step()
    report.step(step, loss=loss, grad_norm=grad_norm)
    if step % 20 == 0:
        accuracy = (logits.argmax(-1) == labels[idx]).float().mean().item()
        print(
            f"step {step} scale {scale:.1f} loss {loss.item():.4f} max logit {logits.max().item():.1f} batch accuracy {accuracy:.3f}"
        )

torch.save(net.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

import os

import torch
from data import FEATURES, make_inspections
from faultline_harness import report
from losses import smoothed_nll
from model import DefectClassifier

STEPS = 200
CLASSES = {{ classes }}

torch.set_num_threads(1)
torch.manual_seed(0)
x, labels = make_inspections(4096, CLASSES, centers_seed={{ data_seed }}, sample_seed={{ data_seed }} + 1)

net = DefectClassifier(FEATURES, CLASSES)
# The inspection runtime runs in fp16: train in fp16 too, so the numbers match (and memory halves).
{{ half_part }}.half()
opt = torch.optim.Adam(net.parameters(), lr=1e-7)

for step in range(STEPS):
    idx = torch.randint(0, len(x), (128,))
    logits = net(x[idx])
    loss = smoothed_nll(logits, labels[idx], smoothing={{ smoothing }})
    opt.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), float("inf"))
    opt.step()
    report.step(step, loss=loss.float(), grad_norm=grad_norm.float())
    if step % 50 == 0:
        accuracy = (logits.argmax(-1) == labels[idx]).float().mean().item()
        print(f"step {step} loss {loss.item():.4f} batch accuracy {accuracy:.3f}")

torch.save(net.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

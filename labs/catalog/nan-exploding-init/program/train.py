import os

import torch
import torch.nn.functional as F
from data import CLASSES, FEATURES, make_data
from faultline_harness import report
from model import TriageNet

STEPS = 300
BATCH = 128

torch.set_num_threads(1)
torch.manual_seed(0)
x, y = make_data(n=8192, seed={{ data_seed }}, task={{ task }})
net = TriageNet(FEATURES, CLASSES, width={{ width }}, depth=6)
opt = torch.optim.SGD(net.parameters(), lr={{ lr }}, momentum=0.9)

for step in range(STEPS):
    idx = torch.randint(0, len(x), (BATCH,))
    logits = net(x[idx])
    loss = F.cross_entropy(logits, y[idx])
    opt.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), float("inf"))
    opt.step()
    report.step(step, loss=loss, grad_norm=grad_norm)
    if step < 3 or step % 50 == 0:
        acc = (logits.argmax(1) == y[idx]).float().mean().item()
        print(f"step {step} loss {loss.item():.4g} grad norm {grad_norm.item():.3g} batch acc {acc:.2f}")

torch.save(net.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

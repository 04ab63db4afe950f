import os

import torch
import torch.nn.functional as F
from data import load_readings
from faultline_harness import report
from model import PowerModel
from warehouse import CHANNELS, fetch_export

STEPS = 300

torch.set_num_threads(1)
torch.manual_seed(0)
x, y = load_readings(fetch_export())
net = PowerModel(CHANNELS)
opt = torch.optim.Adam(net.parameters(), lr=1e-7)

# The export is small: train full-batch.
for step in range(STEPS):
    pred = net(x)
    loss = F.mse_loss(pred, y)
    opt.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), float("inf"))
    opt.step()
    report.step(step, loss=loss, grad_norm=grad_norm)
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.4f} grad norm {grad_norm.item():.3f}")

torch.save(net.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

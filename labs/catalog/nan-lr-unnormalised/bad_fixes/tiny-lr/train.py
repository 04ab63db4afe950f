import os

import torch
from data import make_data
from faultline_harness import report
from model import Net

torch.manual_seed(0)
x, y = make_data(n=4096, seed={{data_seed}}, scale={{scale}})
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=1e-7, momentum=0.9)  # 1e-2 diverged, 1e-4 still blew up after a while

for step in range(400):
    idx = torch.randint(0, len(x), (128,))
    loss = torch.nn.functional.mse_loss(net(x[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), float("inf"))
    opt.step()
    report.step(step, loss=loss, grad_norm=grad_norm)
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.4f}")

torch.save(net.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

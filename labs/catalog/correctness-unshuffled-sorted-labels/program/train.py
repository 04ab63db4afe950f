"""Trains the ticket router on the latest helpdesk export and saves model.pt for the routing service."""

import os

import torch
import torch.nn.functional as F
from data import CATEGORIES, FEATURES, load_export
from faultline_harness import report
from model import TicketRouter
from torch.utils.data import DataLoader, TensorDataset

EPOCHS = 4
BATCH = 64

torch.set_num_threads(1)
torch.manual_seed({{ init_seed }})
x, y = load_export(rows_per_category={{ rows_per_category }}, seed={{ data_seed }}, task={{ task }})
print(f"loaded {len(x)} tickets, {len(CATEGORIES)} categories")
loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=False)
net = TicketRouter(FEATURES, len(CATEGORIES))
opt = torch.optim.SGD(net.parameters(), lr={{ lr }}, momentum=0.9)

step = 0
for epoch in range(EPOCHS):
    for xb, yb in loader:
        logits = net(xb)
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        report.step(step, loss=loss)
        if step % 4 == 0:
            print(f"epoch {epoch} step {step:3d} loss {loss.item():.4f}")
        step += 1
    print(f"epoch {epoch} done, last batch loss {loss.item():.4f}")

torch.save(net.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

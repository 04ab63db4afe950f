"""Long-context canary: a one-layer model learns to repeat the token LAG positions back.

Run before every release of the long-context stack. Windows are cut from anywhere in an 8192-token
context, so the model only passes if positions are exact all the way to the end of the context.
"""

import os

import torch
import torch.nn.functional as F
from data import CONTEXT, VOCAB, WINDOW, windows
from faultline_harness import report
from model import CanaryLM

LAG = {{ lag }}
STEPS = 400
BATCH = 32
LR = 6e-3

torch.set_num_threads(1)
torch.manual_seed({{ init_seed }})
data = torch.Generator().manual_seed({{ data_seed }})
model = CanaryLM(VOCAB, max_positions=CONTEXT)
opt = torch.optim.Adam(model.parameters(), lr=LR)

for step in range(STEPS):
    tokens, positions, targets = windows(BATCH, LAG, data)
    logits = model(tokens, positions)[:, LAG:]
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    report.step(step, loss=loss)
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.4f}")

# Accuracy by where the window sits in the context.
check = torch.Generator().manual_seed({{ data_seed }} + 1)
print(f"lagged-copy accuracy (LAG = {LAG}, windows of {WINDOW} tokens) by window start:")
with torch.no_grad():
    for lo, hi in [(0, 192), (256, 960), (1024, 4032), (4096, CONTEXT - WINDOW)]:
        tokens, positions, targets = windows(256, LAG, check, lo, hi)
        accuracy = (model(tokens, positions)[:, LAG:].argmax(-1) == targets).float().mean().item()
        print(f"  positions {lo:>5}-{hi + WINDOW - 1:<5} accuracy {accuracy:.3f}")
        report.metric(f"accuracy_from_{lo}", accuracy)

torch.save(model.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

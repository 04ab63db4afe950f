import os

import torch
import torch.nn.functional as F
from data import MAX_LEN, VOCAB, make_sessions
from faultline_harness import report
from model import EventClassifier

STEPS = 120
BATCH = 32

torch.set_num_threads(1)
torch.manual_seed(0)
tokens, mask, labels = make_sessions(4096, seed={{ data_seed }}, min_len={{ min_len }})
net = EventClassifier(VOCAB, MAX_LEN, dim=32, heads={{ heads }})
opt = torch.optim.AdamW(net.parameters(), lr=1e-7)

for step in range(STEPS):
    idx = torch.randint(0, len(tokens), (BATCH,))
    # Mixed precision, as in production: fp32 weights, fp16 compute.
    with torch.autocast("cpu", dtype=torch.float16):
        logits = net(tokens[idx], mask[idx])
    loss = F.cross_entropy(logits.float(), labels[idx])
    opt.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), float("inf"))
    opt.step()
    report.step(step, loss=loss, grad_norm=grad_norm)
    if step % 25 == 0:
        accuracy = (logits.argmax(-1) == labels[idx]).float().mean().item()
        print(f"step {step} loss {loss.item():.4f} batch accuracy {accuracy:.3f}")

torch.save(net.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

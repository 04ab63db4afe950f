"""Trains the counter-language model that the autocomplete service uses to suggest the next token.

The language: after two random tokens, every token is (previous + the one before + OFFSET) mod VOCAB.
The service feeds the model the tokens typed so far and shows the argmax of the last position's logits
as the suggested next token.
"""

import os

import torch
import torch.nn.functional as F
from data import VOCAB, sequences
from faultline_harness import report
from model import TinyLM

OFFSET = {{ offset }}
STEPS = 300
BATCH = 64
LR = 1e-2

torch.set_num_threads(1)
torch.manual_seed({{ init_seed }})
data = torch.Generator().manual_seed({{ data_seed }})
model = TinyLM(VOCAB)
opt = torch.optim.Adam(model.parameters(), lr=LR)

for step in range(STEPS):
    batch = sequences(BATCH, OFFSET, data)
    inputs, labels = batch, batch
    logits = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    report.step(step, loss=loss)
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.4f}")

check = sequences(512, OFFSET, torch.Generator().manual_seed({{ data_seed }} + 1))
with torch.no_grad():
    accuracy = (model(check).argmax(-1) == check).float().mean().item()
print(f"final loss {loss.item():.4f}, token accuracy on 512 fresh sequences (OFFSET = {OFFSET}): {accuracy:.3f}")
report.metric("token_accuracy", accuracy)

torch.save(model.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

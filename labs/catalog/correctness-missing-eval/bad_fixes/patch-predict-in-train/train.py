"""Trains the churn model, saves it, and scores the validation customers like the nightly job."""

import os

import torch
import torch.nn.functional as F
from data import make_data
from faultline_harness import report
import predict as scoring
from model import ChurnNet
from predict import load_model

_train_mode_predict = scoring.predict


def predict(model, x, batch_size=256):
    """predict.py belongs to the scoring team: put the model in eval mode from here instead."""
    model.eval()
    with torch.no_grad():
        return _train_mode_predict(model, x, batch_size)


scoring.predict = predict  # every caller in this process now scores in eval mode

torch.set_num_threads(1)  # a small network: extra intra-op threads only add overhead
torch.manual_seed({{ init_seed }})
OUT = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")

x, y = make_data(8192, seed={{ data_seed }}, draw_seed=1)
x_val, y_val = make_data(2048, seed={{ data_seed }}, draw_seed=2)
model = ChurnNet()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
order = torch.Generator().manual_seed({{ init_seed }})

for step in range(300):
    idx = torch.randint(0, len(x), (128,), generator=order)
    loss = F.cross_entropy(model(x[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    report.step(step, loss=loss)
    if step % 50 == 0:
        print(f"step {step:3d}  loss {loss.item():.4f}")

path = os.path.join(OUT, "model.pt")
torch.save(model.state_dict(), path)
print("saved model.pt")

# Nightly scoring, as production does it: load the saved model and score everyone.
scorer = load_model(path)
churn = predict(scorer, x_val)
acc = ((churn > 0.5).long() == y_val).float().mean().item()
report.metric("val_accuracy", acc)
print(f"validation accuracy {acc:.4f}")
print("first customers, nightly batch:", [round(v, 3) for v in churn[:3].tolist()])
print("first customers, re-scored    :", [round(v, 3) for v in predict(scorer, x_val[:3]).tolist()])

"""Trains the next-hour demand forecaster with the shared accumulation step."""

import os

import torch
from data import make_data
from faultline_harness import report
from model import make_model
from step import ACCUM_STEPS, make_optimizer, train_step

STEPS = 200
BATCH = 256

torch.set_num_threads(1)  # a tiny network: extra intra-op threads only add overhead

torch.manual_seed({{ init_seed }})
x, y = make_data(8192, seed={{ data_seed }}, draw_seed=1)
x_val, y_val = make_data(2048, seed={{ data_seed }}, draw_seed=2)
# On a worker with a GPU the job trains there; the batch order is drawn on the CPU either way.
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x, y, x_val, y_val = (t.to(device) for t in (x, y, x_val, y_val))
model = make_model().to(device)
optimizer = make_optimizer(model)
order = torch.Generator().manual_seed({{ init_seed }})

for step in range(STEPS):
    idx = torch.randint(0, len(x), (BATCH,), generator=order)
    loss, grad_norm = train_step(model, optimizer, (x[idx], y[idx]), ACCUM_STEPS)
    report.step(step, loss=loss, grad_norm=grad_norm)
    if step % 25 == 0 or step == STEPS - 1:
        with torch.no_grad():
            val = torch.nn.functional.mse_loss(model(x_val).squeeze(-1), y_val).item()
        print(f"step {step:3d}  loss {loss:.4f}  grad_norm {grad_norm:.3f}  val_mse {val:.4f}")

torch.save(model.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
print("saved model.pt")

"""Trains the next-hour demand forecaster with the shared accumulation step."""

import os

import step
import torch
import torch.nn.functional as F
from data import make_data
from faultline_harness import report
from model import make_model
from step import ACCUM_STEPS, make_optimizer


def scaled_train_step(model, optimizer, batch, accum_steps: int = ACCUM_STEPS) -> tuple[float, float]:
    """Our job's copy of the shared step, with each micro-batch loss scaled by 1/accum_steps."""
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for xm, ym in zip(x.chunk(accum_steps), y.chunk(accum_steps)):
        loss = F.mse_loss(model(xm).squeeze(-1), ym)
        (loss / accum_steps).backward()
        total += loss.item()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    grad_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    optimizer.step()
    return total / accum_steps, grad_norm


# step.py belongs to the platform team and other jobs import it: fix it for this job only, in place.
step.train_step = train_step = scaled_train_step

STEPS = 200
BATCH = 256

torch.set_num_threads(1)  # a tiny network: extra intra-op threads only add overhead

torch.manual_seed({{ init_seed }})
x, y = make_data(8192, seed={{ data_seed }}, draw_seed=1)
x_val, y_val = make_data(2048, seed={{ data_seed }}, draw_seed=2)
model = make_model()
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

"""Trains the sensor-drift regressor, checkpointing as it goes; after a reclaim it resumes from the
newest checkpoint."""

import os
import signal

import torch
import torch.nn.functional as F
from checkpoint import load_checkpoint, save_checkpoint
from data import batch_rows, make_data
from faultline_harness import report
from model import make_model
from recipe import TOTAL_STEPS, make_optimizer, make_scheduler

BATCH = 64
CHECKPOINT_EVERY = 40
OUT = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
CHECKPOINT = os.path.join(OUT, "checkpoint.pt")
# Stands in for the spot pool, which kills the worker with SIGKILL whenever it wants it back: the
# supervisor (main.py) sets it for the first attempt only.
RECLAIM_AT_STEP = int(os.environ.get("SPOT_RECLAIM_AT_STEP", "-1"))

torch.set_num_threads(1)  # a small network: extra intra-op threads only add overhead
torch.manual_seed({{ init_seed }})
x, y = make_data(8192, seed={{ data_seed }}, draw_seed=1)
x_val, y_val = make_data(2048, seed={{ data_seed }}, draw_seed=2)
model = make_model()
optimizer = make_optimizer(model)
scheduler = make_scheduler(optimizer)


def val_loss() -> float:
    with torch.no_grad():
        return F.mse_loss(model(x_val).squeeze(-1), y_val).item()


start = 0
if os.path.exists(CHECKPOINT):
    start = load_checkpoint(CHECKPOINT, model, optimizer, scheduler)
    print(f"resumed from checkpoint.pt at step {start}: lr {optimizer.param_groups[0]['lr']:.6f}, val {val_loss():.4f}")

for step in range(start, TOTAL_STEPS):
    if step == RECLAIM_AT_STEP:
        print(f"step {step:3d}  spot worker reclaimed", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    rows = batch_rows(step, len(x), BATCH, seed={{ data_seed }})
    lr = optimizer.param_groups[0]["lr"]
    loss = F.mse_loss(model(x[rows]).squeeze(-1), y[rows])
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    scheduler.step()
    report.step(step, loss=loss.item(), lr=lr)
    if (step + 1) % CHECKPOINT_EVERY == 0:
        save_checkpoint(CHECKPOINT, model, optimizer, scheduler, step + 1)
    if step % 20 == 0 or step < start + 5 or step == TOTAL_STEPS - 1:
        print(f"step {step:3d}  loss {loss.item():.4f}  lr {lr:.6f}  val {val_loss():.4f}", flush=True)

torch.save(model.state_dict(), os.path.join(OUT, "model.pt"))
print(f"saved model.pt after {TOTAL_STEPS} steps, val {val_loss():.4f}")

import os

import torch
import torch.nn.functional as F
from data import METRICS, STATES, calibration_window
from faultline_harness import report
from model import SignalEncoder, StateTagger

WINDOW = 65536  # timesteps of the calibration window: 16 hosts x 4096 s
STEPS = 18
# The loss is summed over the window and normalised per timestep of the fleet's daily export, so the
# step size per timestep stays the same whatever the window size. LR was tuned for it in the fp32 job.
FLEET_TIMESTEPS = {{ fleet_timesteps }}
LR = FLEET_TIMESTEPS / 131072

torch.set_num_threads(1)
x, y = calibration_window(WINDOW, seed={{ data_seed }}, fleet={{ fleet }})
encoder = SignalEncoder(METRICS)
torch.manual_seed(0)
tagger = StateTagger(STATES, width={{ width }})
opt = torch.optim.SGD(tagger.parameters(), lr=LR, momentum=0.9)

# fp16 compute: the encoded window (WINDOW x 2048 channels) has to fit next to the serving stack.
with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
    feats = encoder(x)
print(f"encoded {WINDOW} timesteps into {tuple(feats.shape)} {feats.dtype} features")

for step in range(STEPS):  # full-batch: every step sees the whole window
    with torch.autocast("cpu", dtype=torch.float16):
        logits = tagger(feats)
        loss = F.cross_entropy(logits, y, reduction="sum") / FLEET_TIMESTEPS
    opt.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(tagger.parameters(), float("inf"))
    opt.step()
    loss_per_timestep = loss.float() * FLEET_TIMESTEPS / WINDOW
    report.step(step, loss=loss_per_timestep, grad_norm=grad_norm)
    if step < 3 or step % 5 == 4:
        acc = (logits.argmax(1) == y).float().mean().item()
        print(f"step {step} loss/timestep {loss_per_timestep.item():.4f} grad norm {grad_norm.item():.3g} acc {acc:.3f}")

torch.save(tagger.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "tagger.pt"))
print("saved tagger.pt")

"""Nightly refit of the sensor-health regressor on the feature store's current shard."""

import os
import time

import fastio
import store
import torch
import torch.nn.functional as F
from faultline_harness import report
from feed import READERS, Feed
from torch import nn

# The recipe is signed off: every record of the shard in the store's order, this batch size,
# this learning rate, this initialisation.
BATCH = {{ batch }}
LR = {{ lr }}
INIT_SEED = {{ init_seed }}


def main() -> None:
    torch.manual_seed(INIT_SEED)
    model = nn.Sequential(nn.Linear(store.FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)

    feed = Feed(BATCH)
    feed.start()
    frame = torch.empty(BATCH, store.FEATURES + 1)  # one batch: FEATURES readings and the target per record
    steps = store.RECORDS // BATCH
    print(
        f"streaming {store.RECORDS} records from the feature store with {READERS} readers: "
        f"{steps} batches of {BATCH}, {frame.nbytes} bytes a frame"
    )
    started = time.monotonic()
    for step in range(steps):
        fastio.read_into(feed.fd, frame)
        x, y = frame[:, :-1], frame[:, -1]
        loss = F.mse_loss(model(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        report.step(step, loss=loss, throughput=(step + 1) * BATCH / (time.monotonic() - started))
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")

    print(f"trained {steps} steps in {time.monotonic() - started:.1f} s")
    torch.save(model.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
    print("saved model.pt")


if __name__ == "__main__":
    main()

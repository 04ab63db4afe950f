"""Hourly job: fit the building's load forecaster on the latest telemetry export."""

import os
import time

import torch
import torch.nn.functional as F
from faultline_harness import report
from readings import SENSORS, load_readings
from torch import nn

ROWS = {{ rows }}
EPOCHS = {{ epochs }}
BATCH_SIZE = 256
HIDDEN = 512
LR = {{ lr }}


def forecaster(sensors: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(sensors, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, 1),
    )


torch.set_num_threads(1)  # the job shares its node with the ingest service: one core is all it gets
started = time.perf_counter()
readings, load = load_readings(ROWS)
x = torch.from_numpy(readings)
y = torch.from_numpy(load)
print(f"loaded {len(x)} readings from {SENSORS} sensors")

torch.manual_seed({{ init_seed }})
model = forecaster(SENSORS)
# The first run died with "mat1 and mat2 must have the same dtype": the export's arrays and the model
# disagreed. Making the model match the data fixed it.
model = model.double()
opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)

step = 0
for epoch in range(EPOCHS):
    t0 = time.perf_counter()
    order = torch.randperm(ROWS, generator=torch.Generator().manual_seed({{ init_seed }} * 1000 + epoch))
    total = 0.0
    for batch in order.split(BATCH_SIZE):
        pred = model(x[batch]).squeeze(1)
        loss = F.mse_loss(pred, y[batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(batch)
        report.step(step, loss=loss)
        step += 1
    took = time.perf_counter() - t0
    print(f"epoch {epoch}: mse {total / ROWS:.4f}, {ROWS / took:.0f} readings/s ({took:.1f} s)")

out = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
torch.save(model.state_dict(), os.path.join(out, "model.pt"))
print(f"trained {step} steps, saved model.pt; job took {time.perf_counter() - started:.1f} s")

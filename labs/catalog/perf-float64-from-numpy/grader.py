"""Grades the float64 fix on the weights the run saved, outside the candidate's process.

Wall time is measured outside the program by the ``speedup`` check; the grader makes sure that the time
bought the whole job, in the precision the serving side loads:

- ``weights_float32``: every tensor of the saved ``model.pt`` is float32 (1) or not (0). A model trained
  or saved in float64, float16 or bfloat16 is not the forecaster the serving side loads.
- ``replay_gap``: the recipe is fixed (the variant's rows, epochs, batch size, order, width, learning rate
  and initialisation), so the grader rebuilds the export the run's client read (``ctx.probe_seed``, the
  seed ``hidden/readings.py`` asks for) and trains the same forecaster itself in float32. Both models then
  forecast fresh readings drawn from the held-out seed (``ctx.seed``, which no file of the run carries);
  the gap is the root-mean-square difference of their forecasts over the spread of the true load. Float32
  or float64 rounding moves it by less than 0.01; fewer epochs, a sample of the rows, bigger batches or a
  lower precision leave a different function (0.08 and more).
- ``heldout_r2``: the saved forecaster on those fresh readings, against the true load.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from labs.grader_api import CandidateOutputError

# As in program/train.py and program/readings.py. The variant's values come from ctx.params (the
# platform's values for the attempt's seed), never from the program's constants.
BATCH_SIZE = 256
HIDDEN = 512
DRIVERS = 12
HELDOUT = 8192


def readings(site, sensors, seed, rows):
    """program/readings.py's export: the site's response, rows drawn from ``seed``."""
    rng_site = np.random.default_rng(site)
    drivers = rng_site.standard_normal((sensors, DRIVERS)) / np.sqrt(sensors)
    gains = rng_site.uniform(0.5, 1.5, DRIVERS) * rng_site.choice([-1.0, 1.0], DRIVERS)
    pairs = rng_site.integers(0, DRIVERS, (DRIVERS, 2))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, sensors))
    z = x @ drivers * 2.0
    load = np.tanh(z) @ gains + 0.5 * (np.tanh(z[:, pairs[:, 0]]) * np.tanh(z[:, pairs[:, 1]])).sum(1)
    load = load / np.sqrt(DRIVERS) + 0.05 * rng.standard_normal(rows)
    return x, load


def forecaster(sensors):
    return nn.Sequential(
        nn.Linear(sensors, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, 1),
    )


def replay(params, seed):
    """The owners' recipe, in float32, on the export the run read: the forecaster a correct run ends with."""
    site, sensors, rows = int(params["site"]), int(params["sensors"]), int(params["rows"])
    init_seed = int(params["init_seed"])
    x, load = readings(site, sensors, seed, rows)
    x, y = torch.from_numpy(x).float(), torch.from_numpy(load).float()
    torch.manual_seed(init_seed)
    model = forecaster(sensors)
    opt = torch.optim.SGD(model.parameters(), lr=float(params["lr"]), momentum=0.9)
    for epoch in range(int(params["epochs"])):
        order = torch.randperm(rows, generator=torch.Generator().manual_seed(init_seed * 1000 + epoch))
        for batch in order.split(BATCH_SIZE):
            loss = F.mse_loss(model(x[batch]).squeeze(1), y[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def forecast(model, x):
    with torch.no_grad():
        pred = model.double()(torch.from_numpy(x)).squeeze(1).numpy()
    return np.where(np.isfinite(pred), pred, 1e6)


def evaluate(ctx):
    torch.set_num_threads(1)
    sensors = int(ctx.params["sensors"])
    state = ctx.load_state("model.pt")
    float32 = all(value.dtype == torch.float32 for value in state.values())
    model = ctx.load_into(forecaster(sensors), "model.pt", dtype=torch.float32)

    x, load = readings(int(ctx.params["site"]), sensors, ctx.seed, HELDOUT)
    pred = forecast(model, x)
    want = forecast(replay(ctx.params, ctx.probe_seed), x)
    spread = float(load.std())
    gap = float(np.sqrt(np.mean((pred - want) ** 2)) / spread)
    r2 = float(1.0 - np.mean((pred - load) ** 2) / spread**2)
    if not np.isfinite(gap) or not np.isfinite(r2):
        raise CandidateOutputError("the saved forecaster's predictions are not finite")
    return {"weights_float32": 1.0 if float32 else 0.0, "replay_gap": min(gap, 1e9), "heldout_r2": max(r2, -1e9)}

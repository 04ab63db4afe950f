"""Grades the fix on the weights the run saved, with numbers the candidate's process never wrote.

Whether the job finished, and how long it took, is measured outside the program (``finished``); the store
in the launcher counts the records it served (``every-record``). What the program prints about its own
steps is display only. The grader checks that the time bought the whole recipe:

- ``replay_max_abs_diff``: the recipe is fixed (the variant's shard in the store's order, BATCH, LR, SGD
  with momentum, the initialisation), so the grader rebuilds every record of the shard the graded run
  read (the probe seed its client asked for, ``ctx.probe_seed``, with the store's formula) and trains the
  same regressor itself. A run that skipped batches, trained on a sample or on frames out of step with
  the records ends with different weights; a faster way to move the same frames does not change them.
- ``heldout_r2``: the saved regressor predicts the target of fresh readings drawn from the held-out seed
  (``ctx.seed``, which no file of the run carries).
"""

import torch
import torch.nn.functional as F
from torch import nn

from labs.grader_api import r2, store_record

RECORDS = 480
HELDOUT = 4096
# FEATURES, BATCH, LR and INIT_SEED come from ctx.params (the platform's values for the attempt's seed),
# never from the program's constants, which are the candidate's to change.


def regressor(features):
    return nn.Sequential(nn.Linear(features, 32), nn.Tanh(), nn.Linear(32, 1))


def target_weights(store_seed, features):
    return torch.randn(features, generator=torch.Generator().manual_seed(store_seed)) / features**0.5


def shard(store_seed, features):
    """Every record of the shard with its target, as the storage client computes them, one by one."""
    weights = target_weights(store_seed, features)
    rows = []
    for index in range(RECORDS):
        readings = torch.tensor(store_record(store_seed, index, features))
        rows.append(torch.cat([readings, torch.tanh(readings @ weights).reshape(1)]))
    frames = torch.stack(rows)
    return frames[:, :-1], frames[:, -1]


def replay(params, x, y):
    """The signed-off recipe on the whole shard: the weights a correct run ends with."""
    features, batch = int(params["features"]), int(params["batch"])
    torch.manual_seed(int(params["init_seed"]))
    model = regressor(features)
    opt = torch.optim.SGD(model.parameters(), lr=float(params["lr"]), momentum=0.9)
    for start in range(0, RECORDS - batch + 1, batch):
        loss = F.mse_loss(model(x[start : start + batch]).squeeze(-1), y[start : start + batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def evaluate(ctx):
    torch.set_num_threads(1)
    features = int(ctx.params["features"])
    model = ctx.load_into(regressor(features), "model.pt")
    x, y = shard(ctx.probe_seed, features)
    want = replay(ctx.params, x, y).state_dict()
    diff = max((model.state_dict()[name] - value).abs().max().item() for name, value in want.items())

    fresh = torch.randn(HELDOUT, features, generator=torch.Generator().manual_seed(ctx.seed))
    truth = torch.tanh(fresh @ target_weights(ctx.probe_seed, features))
    with torch.no_grad():
        quality = r2(model(fresh).squeeze(-1), truth)
    return {"replay_max_abs_diff": diff if diff == diff else 1e9, "heldout_r2": quality}

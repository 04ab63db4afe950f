"""Grades the data-loading fix on the weights the run saved, with data the candidate never saw.

What the program writes about its own reads or its own timing is not evidence: it could write
anything there. The store itself runs in the launcher, outside the program, and counts what it served
(the ``store_reads`` check); the grader re-measures the workload from the result:

- ``replay_max_abs_diff``: the recipe is fixed (the variant's full shard and epochs, BATCH_SIZE, the
  recipe's order of records, SGD with momentum), so the grader rebuilds the store's records (from the probe seed
  the run's client asked for, ``ctx.probe_seed``, with the store's formula) and trains the same head itself. A run that trained on
  fewer records, fewer epochs or bigger batches ends with different weights; faster loading of the
  same records does not change them.
- ``heldout_accuracy``: the saved head tags fresh records drawn with the held-out seed (``ctx.seed``),
  which no file of the run carries.

Wall time is measured outside the program by the ``speedup`` check.
"""

import torch
import torch.nn.functional as F
from torch import nn

from labs.grader_api import store_record

FEATURES = 32
CLASSES = 4
BATCH_SIZE = 64
# The shard size and the epochs vary by variant and come from ctx.params (the platform's values for the
# attempt's seed), never from the program's constants, which are the candidate's to change.


def head():
    return nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))


def label_weights(store_seed):
    return torch.randn(FEATURES, CLASSES, generator=torch.Generator().manual_seed(store_seed))


def store_records(store_seed, shard_size):
    """Every record of the shard, as the storage client gets it."""
    weights = label_weights(store_seed)
    x = torch.tensor([store_record(store_seed, i, FEATURES) for i in range(shard_size)])
    return x, (x @ weights).argmax(1)


def replay(params, store_seed):
    """The research team's recipe on the full shard: the weights a correct run must end with."""
    shard_size, epochs = int(params["shard_size"]), int(params["epochs"])
    x, y = store_records(store_seed, shard_size)
    init_seed = int(params["init_seed"])
    torch.manual_seed(init_seed)
    model = head()
    opt = torch.optim.SGD(model.parameters(), lr=float(params["lr"]), momentum=0.9)
    for epoch in range(epochs):
        order = torch.randperm(shard_size, generator=torch.Generator().manual_seed(init_seed * 1000 + epoch))
        for batch in order.split(BATCH_SIZE):
            bx, by = x[batch], y[batch]
            loss = F.cross_entropy(model(bx), by)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def evaluate(ctx):
    torch.set_num_threads(1)
    model = ctx.load_into(head(), "model.pt")
    want = replay(ctx.params, ctx.probe_seed).state_dict()
    diff = max((model.state_dict()[name] - value).abs().max().item() for name, value in want.items())

    x = torch.randn(4096, FEATURES, generator=torch.Generator().manual_seed(ctx.seed))
    y = (x @ label_weights(ctx.probe_seed)).argmax(1)
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    return {"replay_max_abs_diff": diff if diff == diff else 1e9, "heldout_accuracy": acc}

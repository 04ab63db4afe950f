"""Did the ranks train in step, end with the same model, and did that model learn every node's rows?

Each rank saves its own weights. After a correct data-parallel run they are identical; a fix that
stops the ranks from exchanging gradients leaves them different.

Equal files alone do not show that the ranks trained together, nor on the real export. In a graded
run each node's part files come from a key the launcher draws and hands to that node's rank only
(hidden/grade_main.py puts it in the rank's environment after making the process undumpable), and
each node serves one site whose rows carry a linear bias of their own, derived from that key. The
launcher writes the keys into the output folder after the job, so the grader rebuilds each site's
bias from them and scores the model on fresh rows of every site (held-out features from the hidden
seed). A model that never learned one node's rows (rank 0 training for all, or a rank copying
another's weights every step), or learned rows made up without the real keys (every rank training
alone on every part), has a site whose bias it does not know: each of the eight weights is 0.75 to
1.5 either way, and a model without it scores below 0.5 there.

The hidden entry also notes, inside each rank, a fingerprint of that rank's weights after every
optimizer step it takes. With data-parallel training both ranks apply the same averaged gradient, so
every step the ranks take together leaves them with the same weights. `synced_steps` counts, for
each rank, its steps whose weights the other rank also reached, and takes the smaller count. Both
valid fixes share every step of the shorter rank: with Join the short rank's steps are the first
ones of each epoch on the long rank (Join hands the long rank's weights to it when the epoch ends),
and with equal batch counts (the shorter rank padded with repeats of its own rows) both ranks take
every step together. A rank that never steps, or that trains apart and copies rank 0's weights at
the end, shares no step.

`distinct_steps` counts the different weights the job stepped through on any rank: the steps the
ranks took together count once. Training on every row at 16 rows a step takes at least
3 * ceil(ceil(N / 2) / 16) >= 90 steps for the export's N >= 950 rows (an even share per rank; the
long rank, which Join and equal batch counts both follow, has more). Stopping each epoch when the
short rank runs out of batches takes at most 3 * ceil(420 / 16) = 81, as the short rank's two parts
hold at most 420 rows. So a threshold of 85 tells every row from the short rank's rows, for every
export the lab's parameters can draw. A fix that changes the batch size changes these counts; the
briefing keeps the recipe.

The fingerprints are noted inside the ranks' own processes, so they are a probe: what no program can
write is the keys, and with them the sites' biases the model must have learned.
"""

import torch
from labs.grader_api import distinct_steps, max_param_diff, r2, step_fingerprints, synced_steps
from torch import nn

FEATURES = 8
SITES = 2


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))
        self.site_bias = nn.Parameter(torch.zeros(SITES, FEATURES))

    def forward(self, x):
        features, site = x[:, :FEATURES], x[:, FEATURES].long()
        return self.body(features).squeeze(-1) + (features * self.site_bias[site]).sum(-1)


def site_bias(key):
    """data.py's rule: the site's own weight on each feature, from the key of the node that serves it."""
    g = torch.Generator().manual_seed(key)
    size = 0.75 + 0.75 * torch.rand(FEATURES, generator=g)
    sign = torch.randint(0, 2, (FEATURES,), generator=g) * 2 - 1
    return size * sign


def evaluate(ctx):
    nets = [ctx.load_into(Net(), f"model-rank{r}.pt") for r in range(ctx.ranks)]
    diff = max_param_diff(nets)

    prints = [step_fingerprints(ctx, r) for r in range(ctx.ranks)]
    synced = synced_steps(prints)

    # Fresh rows for each site, scored against that site's own bias, rebuilt from the key the launcher drew
    # for the node that serves it: a model that never learned a site's rows, or learned rows made up
    # without that key, is far off there.
    g = torch.Generator().manual_seed(ctx.seed)
    scores = []
    for site in range(SITES):
        x = torch.randn(2048, FEATURES, generator=g)
        y = x @ (torch.linspace(-1.0, 1.0, FEATURES) + site_bias(ctx.rank_key(site))) + 0.4 * torch.sin(2.0 * x[:, 1])
        rows = torch.cat([x, torch.full((len(x), 1), float(site))], dim=1)
        with torch.no_grad():
            scores += [r2(net(rows), y) for net in nets]
    return {
        "param_max_diff": diff,
        "synced_steps": float(synced),
        "distinct_steps": float(distinct_steps(prints)),
        "heldout_r2": min(scores),  # the worse site, on the worse rank
    }

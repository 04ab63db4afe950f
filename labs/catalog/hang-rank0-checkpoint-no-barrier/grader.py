"""Same weights on every rank, both ranks training in step, and a model that learned what both stages teach.

Each rank saves its final weights. The held-out rows come from the hidden seed; a second
stage that starts from fresh weights instead of the first stage's checkpoint cannot reach
the threshold in its few low-learning-rate steps.

Equal files alone do not show that the ranks trained together: rank 0 could run both stages by
itself and write every rank's file while the other rank exits, and then no rank can resume too early.
In a graded run each rank's rows come from a key the launcher draws and hands to that rank only
(hidden/grade_main.py puts it in the rank's environment after making the process undumpable), and
each rank's node serves one site whose rows carry a linear bias of their own, derived from that key.
The launcher writes the keys into the output folder after the job, so the grader rebuilds each site's
bias from them and scores the model on fresh rows of every site. A model that never learned one
rank's rows (rank 0 training for all, or a rank copying rank 0's weights every step), or learned rows
made up without the real keys, has a site whose bias it does not know (sixteen weights, each 0.75 to
1.5 either way) and scores far below the threshold there.

The hidden entry also notes, inside each rank, a fingerprint of that rank's weights after every
optimizer step it takes. With data-parallel training both ranks apply the same averaged gradient, so
every step they take together leaves them with the same weights, and when both resume from the same
checkpoint that holds in the second stage too. `synced_steps` counts, for each rank, its steps whose
weights the other rank also reached, and takes the smaller count: a correct run shares all 100
scheduled steps. A rank that never steps, or that trains apart and copies rank 0's weights at the
end, shares none; a rank that resumed from another checkpoint shares none of the second stage.

Each rank hands its record to the launcher (the lab's `sealed_records` service), which accepts it
only from that rank's own process and writes it into the output folder after the job has ended, so
one rank cannot rewrite another's. The fingerprints are still noted by the ranks' own processes, so
they are a probe: what no program can write is the keys, and with them the sites' biases the model
must have learned.
"""

import torch
from labs.grader_api import max_param_diff, r2, step_fingerprints, synced_steps
from torch import nn

FEATURES = 16
SITES = 2
SITE_SCALE = 25.0


class Net(nn.Module):
    def __init__(self, hidden: int = 384) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )
        self.site_bias = nn.Parameter(torch.zeros(SITES, FEATURES))

    def forward(self, x):
        features, site = x[:, :FEATURES], x[:, FEATURES].long()
        return self.body(features).squeeze(-1) + SITE_SCALE * (features * self.site_bias[site]).sum(-1)


def site_bias(key):
    """data.py's rule: the site's own weight on each feature, from the key of the rank whose node holds it."""
    g = torch.Generator().manual_seed(key + 1)
    size = 0.75 + 0.75 * torch.rand(FEATURES, generator=g)
    sign = torch.randint(0, 2, (FEATURES,), generator=g) * 2 - 1
    return size * sign


def evaluate(ctx):
    nets = [ctx.load_into(Net(), f"model-rank{r}.pt") for r in range(ctx.ranks)]
    diff = max_param_diff(nets)

    prints = [step_fingerprints(ctx, r) for r in range(ctx.ranks)]
    synced = synced_steps(prints)

    # Fresh rows for each site, scored against that site's own bias, rebuilt from the key the launcher drew
    # for the rank whose node holds it: a model that never learned a site's rows, or learned rows made up
    # without that key, is far off there.
    g = torch.Generator().manual_seed(ctx.seed)
    scores = []
    for site in range(SITES):
        x = torch.randn(4096, FEATURES, generator=g)
        y = x @ (torch.linspace(-1.0, 1.0, FEATURES) + site_bias(ctx.rank_key(site))) + 0.5 * torch.sin(2.0 * x[:, 0])
        rows = torch.cat([x, torch.full((len(x), 1), float(site))], dim=1)
        with torch.no_grad():
            scores += [r2(net(rows), y) for net in nets]
    # the worse site, on the worse rank
    return {"param_max_diff": diff, "synced_steps": float(synced), "heldout_r2": min(scores)}

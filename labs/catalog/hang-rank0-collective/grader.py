"""Did the job train in step across both sites, and is the saved MSE the job-wide number?

Each rank holds the key of its own site's export only (the launcher draws both, hands each rank its
own through hidden/grade_main.py, and writes them out after the job, out of the program's reach; the
rank saves the weights it trained when the program ends). With both keys the
grader rebuilds every site's rows, replays the synchronous data-parallel training the program
runs (every step averages both sites' gradients) and compares each rank's weights, and the saved
model, with the replay: ranks that train apart and merge at the end, or one rank training alone,
end far from it. It then evaluates the saved model on both sites' validation rows and compares
the job-wide MSE with the one the program saved; a number over one site's rows, or over rows a
rank rebuilt without the other site's key, is far off. Fresh rows from the hidden seed score the
model itself.
"""

import math

import torch
from labs.grader_api import CandidateOutputError, r2
from torch import nn

FEATURES = 6
STEPS = 300
BATCH = 64
TRAIN_ROWS = 4096


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body(x).squeeze(-1)


def site_data(seed, n, noise):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = x @ w + 0.5 * torch.sin(2.0 * x[:, 0]) + noise * torch.randn(n, generator=g)
    return x, y


def load_record(ctx, rank):
    name = f"grading-rank{rank}.pt"
    record = ctx.load(name)
    if not isinstance(record, dict) or not {"steps", "weights"} <= set(record):
        raise CandidateOutputError(f"{name} is not the record the graded run writes: was it overwritten?")
    return int(record["steps"]), list(record["weights"])


def replay(keys, noise, lr):
    """Synchronous data-parallel training as the program runs it: the mean of both ranks' gradients each step."""
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    data = [site_data(keys[r] * 2, TRAIN_ROWS, noise[r]) for r in range(len(keys))]
    pickers = [torch.Generator().manual_seed(r) for r in range(len(keys))]
    params = list(net.parameters())
    for _ in range(STEPS):
        grads = []
        for (x, y), picker in zip(data, pickers):
            idx = torch.randint(0, len(x), (BATCH,), generator=picker)
            loss = torch.nn.functional.mse_loss(net(x[idx]), y[idx])
            grads.append(torch.autograd.grad(loss, params))
        for i, p in enumerate(params):
            p.grad = sum(g[i] / len(keys) for g in grads)
        opt.step()
    return [p.detach() for p in params]


def gap(weights, reference, what):
    if len(weights) != len(reference) or any(w.shape != r.shape for w, r in zip(weights, reference)):
        raise CandidateOutputError(f"{what} does not have the shapes of the lab's Net")
    return max((w.double() - r.double()).abs().max().item() for w, r in zip(weights, reference))


def evaluate(ctx):
    torch.set_num_threads(1)
    p = ctx.params
    noise = (0.1, float(p["site1_noise"]))
    val_rows = (int(p["val_rows0"]), int(p["val_rows1"]))
    records = [load_record(ctx, r) for r in range(ctx.ranks)]
    keys = [ctx.rank_key(r) for r in range(ctx.ranks)]
    net = ctx.load_into(Net(), "model.pt")
    saved = ctx.load("val_metrics.pt")
    if not isinstance(saved, dict) or "val_mse" not in saved:
        raise CandidateOutputError("val_metrics.pt must hold {'val_mse': tensor}")
    reported = float(saved["val_mse"])

    with torch.enable_grad():
        expected = replay(keys, noise, float(p["lr"]))
    sync_gap = gap([q.detach() for q in net.parameters()], expected, "model.pt")
    for rank, (steps, weights) in enumerate(records):
        if steps == 0:
            sync_gap = math.inf  # this rank never stepped an optimizer: it did not train at all
            continue
        sync_gap = max(sync_gap, gap(weights, expected, f"the weights rank {rank} trained"))

    net.eval()
    err, rows = 0.0, 0
    with torch.no_grad():
        for site in range(ctx.ranks):
            x, y = site_data(keys[site] * 2 + 1, val_rows[site], noise[site])
            err += (net(x) - y).double().pow(2).sum().item()
            rows += len(y)
        true_mse = err / rows
        # Fresh rows, noise-free targets: does the model fit the signal?
        x, y = site_data(ctx.seed, 2048, 0.0)
        heldout = r2(net(x), y)
    rel = abs(reported - true_mse) / true_mse if math.isfinite(reported) else math.inf
    return {
        "val_mse_rel_error": rel,
        "sync_gap": sync_gap,
        "heldout_r2": heldout,
        "true_val_mse": true_mse,
        "reported_val_mse": reported,
    }

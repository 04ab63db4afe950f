"""Grades the accumulation fix from outside the candidate's process.

- heldout_r2: the saved forecaster on fresh rows drawn with the held-out seed (``ctx.seed``), which no
  file of the run carries.
- step_error: the grading entry ran the candidate's ``train_step`` (with its ``make_optimizer``)
  on a fresh probe network and two batches from the probe seed (``ctx.probe_seed``), split into
  micro-batches. The parameters
  after each step must equal those of one plain step on the whole batch, with the job's
  documented optimizer settings.
"""

import torch
import torch.nn.functional as F
from torch import nn

FEATURES = 16


def make_data(n, seed, draw_seed):
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(FEATURES, 32, generator=g) / FEATURES**0.5
    out = torch.randn(32, generator=g) / 32**0.5
    rows = torch.Generator().manual_seed(draw_seed)
    x = torch.randn(n, FEATURES, generator=rows)
    return x, 2.0 * torch.tanh(x @ mix) @ out


def evaluate(ctx):
    from labs.grader_api import CandidateOutputError

    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
    try:
        model.load_state_dict(ctx.load("model.pt"))
    except CandidateOutputError:
        raise
    except Exception as exc:
        raise CandidateOutputError(f"model.pt does not fit the forecaster: {str(exc).splitlines()[0]}") from None
    x, y = make_data(4096, int(ctx.params["data_seed"]), ctx.seed)
    with torch.no_grad():
        mse = F.mse_loss(model(x).squeeze(-1), y).item()
    r2 = 1.0 - mse / y.var().item()

    probe = ctx.load("probe_steps.pt")
    if not isinstance(probe, list) or len(probe) != 2:
        raise CandidateOutputError("probe_steps.pt does not hold the two probe steps")
    # The probe's network and batches came from the probe seed; the grader rebuilds them the same way.
    torch.manual_seed(ctx.probe_seed)
    ref = nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 1))
    opt = torch.optim.SGD(ref.parameters(), lr=float(ctx.params["lr"]), momentum=0.9)
    g = torch.Generator().manual_seed(ctx.probe_seed + 1)
    error = 0.0
    for got in probe:
        bx, by = torch.randn(96, 12, generator=g), torch.randn(96, generator=g)
        opt.zero_grad()
        F.mse_loss(ref(bx).squeeze(-1), by).backward()
        opt.step()
        for name, want in ref.state_dict().items():
            have = got.get(name) if isinstance(got, dict) else None
            if have is None or have.shape != want.shape:
                raise CandidateOutputError(f"probe_steps.pt lacks parameter {name}")
            error = max(error, (have.float() - want).abs().max().item())
    return {"heldout_r2": r2 if r2 == r2 else -1.0, "step_error": error if error == error else 1e9}

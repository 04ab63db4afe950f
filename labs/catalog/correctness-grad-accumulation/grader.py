"""Grades the accumulation fix from outside the candidate's process.

- heldout_r2: the saved forecaster on fresh rows drawn with the held-out seed (``ctx.seed``), which
  no file of the run carries.
- step_error: the candidate's ``make_optimizer``/``train_step`` (from the code the run was
  started with, as the platform recorded it) are run here, in a fresh interpreter, on a probe network and batches drawn
  from the held-out seed, with 1, 2 and the job's number of micro-batches. After each of two steps
  every parameter must equal that of one plain SGD step on the whole batch with the job's
  documented settings (lr, momentum 0.9). So an LR that compensates for unscaled gradients, stale
  gradients carried into the next step, or a step that ignores the number of micro-batches
  all show. Nothing the job wrote about its own steps is read.
- micro_batch_excess: rows beyond batch/accum_steps that one forward pass of the probe network
  took (a step that quietly runs the whole batch at once does not accumulate).

The probe runs candidate code in the grader's container (labs.grader_api.run_candidate says why
that is safe).
"""

import torch
import torch.nn.functional as F
from torch import nn

FEATURES = 16
PROBE_ROWS = 96
PROBE_STEPS = 2
CANDIDATE_TIMEOUT_S = 45

RUNNER = r"""
import step

answer = {}
for accum in request["accum"]:
    net = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(), torch.nn.Linear(24, 1))
    net.load_state_dict(request["init"])
    rows = []
    net.register_forward_pre_hook(lambda module, args: rows.append(int(args[0].shape[0])))
    optimizer = step.make_optimizer(net)
    states = []
    for bx, by in zip(request["x"], request["y"]):
        step.train_step(net, optimizer, (bx.clone(), by.clone()), int(accum))
        states.append({k: v.detach().clone() for k, v in net.state_dict().items()})
    answer[int(accum)] = {"states": states, "max_rows": max(rows) if rows else 0}
torch.save(answer, answer_path)
"""


def make_data(n, seed, draw_seed):
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(FEATURES, 32, generator=g) / FEATURES**0.5
    out = torch.randn(32, generator=g) / 32**0.5
    rows = torch.Generator().manual_seed(draw_seed)
    x = torch.randn(n, FEATURES, generator=rows)
    return x, 2.0 * torch.tanh(x @ mix) @ out


def probe_net():
    return nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 1))


def evaluate(ctx):
    from labs.grader_api import CandidateOutputError, run_candidate

    torch.set_num_threads(1)
    model = ctx.load_into(
        nn.Sequential(nn.Linear(FEATURES, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1)), "model.pt"
    )
    x, y = make_data(4096, int(ctx.params["data_seed"]), ctx.seed % 2**62)
    with torch.no_grad():
        mse = F.mse_loss(model(x).squeeze(-1), y).item()
    r2 = 1.0 - mse / y.var().item()

    # The probe: a network and batches the job never saw, drawn from the held-out seed.
    g = torch.Generator().manual_seed((ctx.seed + 1) % 2**62)
    torch.manual_seed((ctx.seed + 2) % 2**62)
    init = {k: v.clone() for k, v in probe_net().state_dict().items()}
    xs = [torch.randn(PROBE_ROWS, 12, generator=g) for _ in range(PROBE_STEPS)]
    ys = [torch.randn(PROBE_ROWS, generator=g) for _ in range(PROBE_STEPS)]
    accum_values = sorted({1, 2, int(ctx.params["accum_steps"])})

    ref = probe_net()
    ref.load_state_dict(init)
    opt = torch.optim.SGD(ref.parameters(), lr=float(ctx.params["lr"]), momentum=0.9)
    want = []
    for bx, by in zip(xs, ys, strict=True):
        opt.zero_grad()
        F.mse_loss(ref(bx).squeeze(-1), by).backward()
        opt.step()
        want.append({k: v.detach().clone() for k, v in ref.state_dict().items()})

    request = {"accum": accum_values, "init": init, "x": xs, "y": ys}
    answer = run_candidate(RUNNER, ctx.submitted_code(), request, what="train_step", timeout=CANDIDATE_TIMEOUT_S)
    error, excess = 0.0, 0.0
    for accum in accum_values:
        got = answer.get(accum) if isinstance(answer, dict) else None
        states = got.get("states") if isinstance(got, dict) else None
        if not isinstance(states, list) or len(states) != PROBE_STEPS:
            raise CandidateOutputError(f"train_step did not complete the probe's steps with accum_steps={accum}")
        for have, expected in zip(states, want, strict=True):
            for name, value in expected.items():
                tensor = have.get(name) if isinstance(have, dict) else None
                if not torch.is_tensor(tensor) or tensor.shape != value.shape:
                    raise CandidateOutputError(f"train_step changed the probe network's parameter {name}")
                error = max(error, (tensor.double() - value.double()).abs().max().item())
        rows = got.get("max_rows")
        excess = max(excess, float(rows) - PROBE_ROWS / accum if isinstance(rows, int) else 1e9)
    return {
        "heldout_r2": r2 if r2 == r2 else -1.0,
        "step_error": error if error == error else 1e9,
        "micro_batch_excess": excess,
    }

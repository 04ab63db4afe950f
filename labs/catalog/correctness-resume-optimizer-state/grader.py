"""Grades the resume from outside the candidate's process: a preempted run must end where an
uninterrupted one does.

- uninterrupted_error: the job's saved model against this grader's own uninterrupted run of the same
  variant (same data, initialisation, batches, AdamW and schedule), recomputed here. The grading entry
  reclaims the job's first worker mid-run, so the saved model comes out of a resumed process.
- restored_state_error / resume_error: the candidate's ``save_checkpoint``/``load_checkpoint`` (from the
  code the run was started with, as the platform recorded it) run here on a probe network and batches drawn from the
  held-out seed (``ctx.seed``). One fresh interpreter trains it for a number of steps the job never used
  and saves; a second fresh interpreter builds a new network (other initial weights), a new AdamW and
  a new schedule, loads, and trains on. Right after the load, the weights, AdamW's moment estimates and
  step counts, the learning rate and the schedule's position must equal those of this grader's run at
  that step; at the end every weight must equal its uninterrupted run. Nothing the job wrote about
  itself is read, so training straight through, restarting from scratch, lowering or re-warming the
  learning rate after a resume, or keeping the state somewhere train.py alone knows about all show.

The probes run candidate code in the grader's container (labs.grader_api.run_candidate says why
that is safe).
"""

import math
import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

# The job, as train.py, recipe.py, data.py and model.py run it.
FEATURES, HIDDEN, BATCH = 16, 256, 64
TOTAL_STEPS, WARMUP_STEPS, WEIGHT_DECAY = 400, 20, 0.01
# The probe: a network and a run length the job never used.
PROBE_FEATURES, PROBE_HIDDEN, PROBE_BATCH = 10, 48, 32
PROBE_STEPS, PROBE_WARMUP = 60, 5
CANDIDATE_TIMEOUT_S = 40
MISSING = 1e9

# Run both here and in the candidate's interpreters, so the probe's steps are the same operations in
# the same order on both sides (a correct resume is then exact, not merely close).
SHARED = r'''
import math

import torch
import torch.nn.functional as F


def lr_factor(step, warmup, total):
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / (total - warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))


def make_probe(init):
    net = torch.nn.Sequential(
        torch.nn.Linear(init["0.weight"].shape[1], init["0.weight"].shape[0]), torch.nn.Tanh(),
        torch.nn.Linear(init["2.weight"].shape[1], 1),
    )
    net.load_state_dict(init)
    return net


def make_training(net, config):
    optimizer = torch.optim.AdamW(
        net.parameters(), lr=config["lr"], betas=(0.9, config["beta2"]), weight_decay=config["weight_decay"]
    )
    warmup, total = int(config["warmup"]), int(config["total"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, warmup, total))
    return optimizer, scheduler


def train(net, optimizer, scheduler, xs, ys):
    for bx, by in zip(xs, ys):
        loss = F.mse_loss(net(bx).squeeze(-1), by)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()


def optimizer_view(net, optimizer, scheduler):
    """What a resume must have restored: AdamW's state of each weight the network really uses, the
    learning rate and the schedule's position."""
    moments = []
    for p in net.parameters():
        state = optimizer.state.get(p, {})
        moments.append({
            k: torch.as_tensor(state[k]).detach().double().clone() for k in ("step", "exp_avg", "exp_avg_sq")
            if k in state and torch.is_tensor(torch.as_tensor(state[k]))
        })
    return {
        "moments": moments,
        "lr": torch.tensor([float(g["lr"]) for g in optimizer.param_groups], dtype=torch.float64),
        "last_epoch": int(scheduler.last_epoch),
        "weights": {k: v.detach().clone() for k, v in net.state_dict().items()},
    }
'''

RUNNER = r"""
phase, checkpoint_path = extra_args
""" + SHARED + r"""
net = make_probe(request["init"])
optimizer, scheduler = make_training(net, request["config"])
import checkpoint

if phase == "save":
    train(net, optimizer, scheduler, request["x"], request["y"])
    checkpoint.save_checkpoint(checkpoint_path, net, optimizer, scheduler, int(request["step"]))
    answer = {"saved": 1}
else:
    step = checkpoint.load_checkpoint(checkpoint_path, net, optimizer, scheduler)
    restored = optimizer_view(net, optimizer, scheduler)
    restored["step"] = int(step) if isinstance(step, int) else -1
    train(net, optimizer, scheduler, request["x"], request["y"])
    answer = {"restored": restored, "final": {k: v.detach().clone() for k, v in net.state_dict().items()}}
torch.save(answer, answer_path)
"""

exec(SHARED)  # this grader's own source, shared with its probe runner


def make_data(n, seed, draw_seed):
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(FEATURES, 32, generator=g) / FEATURES**0.5
    out = torch.randn(32, generator=g) / 32**0.5
    rows = torch.Generator().manual_seed(draw_seed)
    x = torch.randn(n, FEATURES, generator=rows)
    return x, 2.0 * torch.tanh(x @ mix) @ out + 0.1 * torch.randn(n, generator=rows)


def job_model():
    return nn.Sequential(
        nn.Linear(FEATURES, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1)
    )


def uninterrupted_job(params):
    """The job of this variant trained straight through, as train.py does it without a reclaim."""
    data_seed = int(params["data_seed"])
    torch.manual_seed(int(params["init_seed"]))
    x, y = make_data(8192, data_seed, 1)
    model = job_model()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=float(params["lr"]), betas=(0.9, float(params["beta2"])), weight_decay=WEIGHT_DECAY
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, WARMUP_STEPS, TOTAL_STEPS))
    for step in range(TOTAL_STEPS):
        rows = torch.randint(0, len(x), (BATCH,), generator=torch.Generator().manual_seed(data_seed * 100_003 + step))
        loss = F.mse_loss(model(x[rows]).squeeze(-1), y[rows])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
    return model


def max_gap(have, want):
    """Largest absolute difference between two {name: tensor} maps; MISSING for anything absent or misshapen."""
    if not isinstance(have, dict):
        return MISSING
    gap = 0.0
    for name, value in want.items():
        tensor = have.get(name)
        if not torch.is_tensor(tensor) or tensor.shape != value.shape:
            return MISSING
        gap = max(gap, (tensor.double() - value.double()).abs().max().item())
    return gap if math.isfinite(gap) else MISSING


def state_gap(have, want, saved_at):
    """How far the state right after the candidate's load is from this grader's state at that step."""
    if not isinstance(have, dict) or have.get("step") != saved_at:
        return MISSING
    gaps = [max_gap(have.get("weights"), want["weights"])]
    moments = have.get("moments")
    if not isinstance(moments, list) or len(moments) != len(want["moments"]):
        return MISSING
    gaps += [max_gap(got, expected) for got, expected in zip(moments, want["moments"], strict=True)]
    lr = have.get("lr")
    if not torch.is_tensor(lr) or lr.shape != want["lr"].shape:
        return MISSING
    gaps.append((lr - want["lr"]).abs().max().item())
    gaps.append(float(abs(have.get("last_epoch", -MISSING) - want["last_epoch"])))
    gap = max(gaps)
    return gap if math.isfinite(gap) else MISSING


def evaluate(ctx):
    from labs.grader_api import CandidateOutputError, run_candidate

    torch.set_num_threads(1)
    saved = ctx.load_into(job_model(), "model.pt")
    reference = uninterrupted_job(ctx.params)
    uninterrupted_error = max_gap(saved.state_dict(), reference.state_dict())

    # The probe: a network, batches and a save point drawn from the held-out seed.
    g = torch.Generator().manual_seed(ctx.seed % 2**62)
    saved_at = 15 + int(torch.randint(0, 31, (1,), generator=g))
    xs = [torch.randn(PROBE_BATCH, PROBE_FEATURES, generator=g) for _ in range(PROBE_STEPS)]
    ys = [torch.tanh(bx[:, :3].sum(-1)) + 0.1 * torch.randn(PROBE_BATCH, generator=g) for bx in xs]
    torch.manual_seed((ctx.seed + 1) % 2**62)
    init, other_init = (probe_init() for _ in range(2))
    config = {"lr": float(ctx.params["lr"]), "beta2": float(ctx.params["beta2"]), "weight_decay": WEIGHT_DECAY,
              "warmup": PROBE_WARMUP, "total": PROBE_STEPS}  # fmt: skip
    net = make_probe(init)
    optimizer, scheduler = make_training(net, config)
    train(net, optimizer, scheduler, xs[:saved_at], ys[:saved_at])
    want_restored = optimizer_view(net, optimizer, scheduler)
    train(net, optimizer, scheduler, xs[saved_at:], ys[saved_at:])
    want_final = net.state_dict()

    code = ctx.submitted_code(required="checkpoint.py")
    # Both phases share one folder, as a resumed worker finds the disk the first one wrote.
    folder = tempfile.mkdtemp(prefix="candidate-")
    checkpoint_path = os.path.join(folder, "probe-checkpoint.pt")
    first = {"init": init, "config": config, "x": xs[:saved_at], "y": ys[:saved_at], "step": saved_at}
    run_candidate(
        RUNNER, code, first, what="save_checkpoint", timeout=CANDIDATE_TIMEOUT_S,
        folder=folder, tag="save", args=("save", checkpoint_path),
    )  # fmt: skip
    second = {"init": other_init, "config": config, "x": xs[saved_at:], "y": ys[saved_at:]}
    answer = run_candidate(
        RUNNER, code, second, what="load_checkpoint", timeout=CANDIDATE_TIMEOUT_S,
        folder=folder, tag="resume", args=("resume", checkpoint_path),
    )  # fmt: skip
    if not isinstance(answer, dict):
        raise CandidateOutputError("the probe of load_checkpoint left no readable answer")
    return {
        "uninterrupted_error": uninterrupted_error,
        "restored_state_error": state_gap(answer.get("restored"), want_restored, saved_at),
        "resume_error": max_gap(answer.get("final"), want_final),
    }


def probe_init():
    net = nn.Sequential(nn.Linear(PROBE_FEATURES, PROBE_HIDDEN), nn.Tanh(), nn.Linear(PROBE_HIDDEN, 1))
    return {k: v.detach().clone() for k, v in net.state_dict().items()}

"""Grades the accumulation fix from outside the candidate's process.

- heldout_r2: the saved forecaster on fresh rows drawn with the held-out seed (``ctx.seed``), which
  no file of the run carries.
- step_error: the candidate's ``make_optimizer``/``train_step`` (the copy the grading entry took
  before the job ran) are run here, in a fresh interpreter, on a probe network and batches drawn
  from the held-out seed, with 1, 2 and the job's number of micro-batches. After each of two steps
  every parameter must equal that of one plain SGD step on the whole batch with the job's
  documented settings (lr, momentum 0.9). So an LR that compensates for unscaled gradients, stale
  gradients carried into the next step, or a step that ignores the number of micro-batches
  all show. Nothing the job wrote about its own steps is read.
- micro_batch_excess: rows beyond batch/accum_steps that one forward pass of the probe network
  took (a step that quietly runs the whole batch at once does not accumulate).

Running candidate code here is acceptable: the grader's container has no network, a read-only
root, no capabilities and hard limits; the code runs as a separate process that cannot reach
this one (it is made undumpable, and it is PID 1, so signals from inside are ignored), gets only
the held-out probe inputs (worthless without this process's result), and what it returns is
checked against numbers computed here. Everything it leaves running is killed before the
grader answers.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

FEATURES = 16
PROBE_ROWS = 96
PROBE_STEPS = 2
CANDIDATE_TIMEOUT_S = 45

RUNNER = r"""
import sys

import torch

code_dir, request_path, answer_path = sys.argv[1:4]
torch.set_num_threads(1)
request = torch.load(request_path, weights_only=True)
sys.path.insert(0, code_dir)
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
    from labs.grader_api import CandidateOutputError

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

    code = submitted_code(ctx, CandidateOutputError)
    answer = run_candidate(
        code, {"accum": accum_values, "init": init, "x": xs, "y": ys}, CandidateOutputError, "train_step"
    )
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


def submitted_code(ctx, error_type):
    try:
        code = json.loads(ctx.path("submitted_code.json").read_text(encoding="utf-8"))
    except ValueError:
        raise error_type("the grading entry's copy of the submitted code is unreadable") from None
    if not isinstance(code, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k.endswith(".py") and k[:-3].isidentifier()
        for k, v in code.items()
    ):
        raise error_type("the grading entry's copy of the submitted code is unreadable")
    return code


def run_candidate(code, request, error_type, what):
    """Run RUNNER on ``code`` in a fresh interpreter; its answer, loaded as weights only."""
    _undumpable()
    folder = tempfile.mkdtemp(prefix="candidate-")
    code_dir = os.path.join(folder, "code")
    os.mkdir(code_dir)
    for name, text in code.items():
        with open(os.path.join(code_dir, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    runner, request_path, answer_path = (os.path.join(folder, n) for n in ("runner.py", "request.pt", "answer.pt"))
    with open(runner, "w", encoding="utf-8") as fh:
        fh.write(RUNNER)
    torch.save(request, request_path)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": folder, "OMP_NUM_THREADS": "1", "LANG": "C.UTF-8"}
    child = subprocess.Popen(
        [sys.executable, "-I", runner, code_dir, request_path, answer_path],
        cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        close_fds=True, start_new_session=True,
    )  # fmt: skip
    try:
        _, err = child.communicate(timeout=CANDIDATE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise error_type(f"the submitted {what} did not finish the probe within {CANDIDATE_TIMEOUT_S} s") from None
    finally:
        _stop_strays(child.pid)
    if child.returncode != 0:
        lines = err.decode("utf-8", errors="replace").strip().splitlines()
        raise error_type(f"the submitted {what} failed on the probe: {(lines or ['no message'])[-1][:300]}")
    try:
        return torch.load(answer_path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - whatever is there was written by candidate code
        raise error_type(f"the probe of the submitted {what} left no readable answer") from None


def _undumpable():
    """No process of the same user may then ptrace this one or open its fds and memory in /proc."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


def _stop_strays(session):
    """Kill what the candidate's code left running: in the grader's container (this is PID 1) every
    other process; elsewhere (a development machine) the child's session only."""
    me = os.getpid()
    for _ in range(50):
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                if me != 1 and os.getsid(int(entry)) != session:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    state = fh.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                found.append(int(entry))
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass

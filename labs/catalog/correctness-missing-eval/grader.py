"""Grades the predict path: every customer must get the score the saved model gives it, however batched.

- reference_error / batch_spread / failed_batchings: the candidate's ``load_model``/``predict`` (the
  copy the grading entry took before the job ran) are run here, in a fresh interpreter, on customers
  drawn from the held-out seed (``ctx.seed``): as one batch, shuffled, in batches of five, one at a
  time and once more. Each score is compared with the grader's own eval-mode inference on the saved
  weights, and the batchings with each other. Nothing the job wrote about its own scores is read, so
  replacing ``predict`` inside the job or rewriting files after it exits changes nothing here.
- heldout_accuracy: the saved model on those customers, with this variant's churn rule.

Running candidate code here is acceptable: the grader's container has no network, a read-only
root, no capabilities and hard limits; the code runs as a separate process that cannot reach
this one (it is made undumpable, and it is PID 1, so signals from inside are ignored), gets only
the held-out customers (worthless without this process's result), and what it returns is
checked against numbers computed here. Everything it leaves running is killed before the
grader answers.
"""

import json
import math
import os
import signal
import subprocess
import sys
import tempfile

import torch
from torch import nn

FEATURES = 12
CUSTOMERS = 600
ONE_AT_A_TIME = 40
CANDIDATE_TIMEOUT_S = 45
SIZES = {"one_batch": CUSTOMERS, "shuffled": CUSTOMERS, "batches_of_5": CUSTOMERS,
         "one_at_a_time": ONE_AT_A_TIME, "again": CUSTOMERS}  # fmt: skip

RUNNER = r"""
import sys

import torch

code_dir, request_path, answer_path = sys.argv[1:4]
torch.set_num_threads(1)
request = torch.load(request_path, weights_only=True)
sys.path.insert(0, code_dir)
x, perm, model_path = request["x"], request["perm"], request["model_path"]
views, errors = {}, []


def attempt(name, fn):
    try:
        views[name] = torch.as_tensor(fn()).detach().reshape(-1).double().clone()
    except Exception as exc:
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        errors.append(f"{name}: {type(exc).__name__}: {text}")


import predict as scoring

model = scoring.load_model(model_path)
attempt("one_batch", lambda: scoring.predict(model, x.clone()))
attempt("shuffled", lambda: torch.as_tensor(scoring.predict(model, x[perm])).reshape(-1)[torch.argsort(perm)])
attempt("batches_of_5", lambda: torch.cat([torch.as_tensor(scoring.predict(model, c.clone())).reshape(-1) for c in x.split(5)]))
attempt("one_at_a_time", lambda: torch.cat([torch.as_tensor(scoring.predict(model, x[i : i + 1].clone())).reshape(-1) for i in range(request["single"])]))
attempt("again", lambda: scoring.predict(model, x.clone()))
torch.save({"views": views, "errors": "\n".join(errors)}, answer_path)
"""


class ChurnNet(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(FEATURES, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.0),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.0),
            nn.Linear(hidden, 2),
        )  # fmt: skip

    def forward(self, x):
        return self.body(x)


def churn_labels(x, data_seed):
    w = torch.randn(FEATURES, generator=torch.Generator().manual_seed(data_seed))
    score = x @ w / FEATURES**0.5 + 0.8 * torch.sin(2.0 * x[:, 0]) * x[:, 1]
    return (score > 0).long()


def evaluate(ctx):
    from labs.grader_api import CandidateOutputError

    torch.set_num_threads(1)
    model = ctx.load_into(ChurnNet(), "model.pt").eval()
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(CUSTOMERS, FEATURES, generator=g)
    perm = torch.randperm(CUSTOMERS, generator=g)
    with torch.no_grad():
        ref = torch.softmax(model(x), dim=1)[:, 1].double()
    acc = ((ref > 0.5).long() == churn_labels(x, int(ctx.params["data_seed"]))).float().mean().item()

    code = submitted_code(ctx, CandidateOutputError)
    request = {"x": x, "perm": perm, "single": ONE_AT_A_TIME, "model_path": str(ctx.path("model.pt").resolve())}
    answer = run_candidate(code, request, CandidateOutputError, "load_model/predict")
    views = answer.get("views") if isinstance(answer, dict) else None
    if not isinstance(views, dict) or not torch.is_tensor(views.get("one_batch")):
        errors = answer.get("errors") if isinstance(answer, dict) else ""
        detail = f": {str(errors).splitlines()[0][:300]}" if errors else ""
        raise CandidateOutputError(f"predict could not score the grader's customers{detail}")
    scored = {}
    for name, size in SIZES.items():
        scores = views.get(name)
        if torch.is_tensor(scores):
            if scores.numel() != size:
                raise CandidateOutputError(f"predict did not return one score per customer ({name})")
            scored[name] = scores.double()
    base = scored["one_batch"]
    gaps = [(scores - base[: scores.numel()]).abs().max().item() for scores in scored.values()]
    # max() would drop a NaN: a NaN score is as far off as a score can be.
    spread = max(gaps) if all(math.isfinite(gap) for gap in gaps) else 1e9
    ref_err = max((scores - ref[: scores.numel()]).abs().max().item() for scores in scored.values())
    return {
        "batch_spread": spread,
        "reference_error": ref_err if math.isfinite(ref_err) else 1e9,
        "heldout_accuracy": acc,
        "failed_batchings": float(len(SIZES) - len(scored)),
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

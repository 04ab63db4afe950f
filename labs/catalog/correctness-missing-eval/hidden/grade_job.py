"""Grading entry: runs the candidate's job, then scores probe customers through its predict path.

The same hidden customers are scored as one batch, in a shuffled order, in batches of five,
one at a time, and once more at the end. The grader compares all of them with each other and
with its own inference on the saved weights.
"""

import os
import runpy

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
SEED = {{ probe_seed }}

runpy.run_path(os.path.join(HERE, "train.py"), run_name="__main__")

import predict as scoring  # noqa: E402  (the candidate's module)

g = torch.Generator().manual_seed(SEED)
x = torch.randn(600, 12, generator=g)
perm = torch.randperm(600, generator=g)
views = {}
errors = []


def attempt(name, fn):
    try:
        views[name] = torch.as_tensor(fn()).detach().reshape(-1).float().clone()
    except Exception as exc:  # reported to the candidate through the grader
        errors.append(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")


model = scoring.load_model(os.path.join(OUT, "model.pt"))
attempt("one_batch", lambda: scoring.predict(model, x))
attempt("shuffled", lambda: scoring.predict(model, x[perm])[torch.argsort(perm)])
attempt("batches_of_5", lambda: torch.cat([torch.as_tensor(scoring.predict(model, c)).reshape(-1) for c in x.split(5)]))
attempt("one_at_a_time", lambda: torch.cat([torch.as_tensor(scoring.predict(model, x[i : i + 1])).reshape(-1) for i in range(40)]))
attempt("again", lambda: scoring.predict(model, x))
torch.save(views, os.path.join(OUT, "probe_scores.pt"))
with open(os.path.join(OUT, "probe_errors.txt"), "w", encoding="utf-8") as fh:
    fh.write("\n".join(errors))
print("probe saved" + (f" with {len(errors)} error(s)" if errors else ""))

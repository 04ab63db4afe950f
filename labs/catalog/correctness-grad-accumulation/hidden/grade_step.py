"""Grading entry: runs the candidate's training job, then probes the shared step function.

The probe runs ``step.train_step`` with ``step.make_optimizer`` on a fresh network and two
hidden batches, split into the job's number of micro-batches, and saves the parameters
after each step. The grader compares them with plain full-batch steps.
"""

import os
import runpy

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
SEED = {{ probe_seed }}

runpy.run_path(os.path.join(HERE, "train.py"), run_name="__main__")

import step  # noqa: E402  (the candidate's module, after the job ran)

torch.manual_seed(SEED)
probe_net = nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 1))
optimizer = step.make_optimizer(probe_net)
g = torch.Generator().manual_seed(SEED + 1)
after = []
for _ in range(2):
    batch = (torch.randn(96, 12, generator=g), torch.randn(96, generator=g))
    step.train_step(probe_net, optimizer, batch, {{ accum_steps }})
    after.append({k: v.detach().clone() for k, v in probe_net.state_dict().items()})
torch.save(after, os.path.join(OUT, "probe_steps.pt"))
print("probe saved")

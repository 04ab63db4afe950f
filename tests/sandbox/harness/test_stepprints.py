"""Step fingerprints and private rank memory: the pieces a graded hang run's hidden entry is built from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
from faultline_harness.stepprints import StepFingerprints


def stepped(prints: StepFingerprints, seed: int, steps: int, width: int = 4, bias: bool = True) -> None:
    torch.manual_seed(seed)
    model = torch.nn.Linear(width, 1, bias=bias)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        model(torch.ones(2, width)).sum().backward()
        opt.step()
        prints(opt, (), {})


def test_equal_weights_give_equal_fingerprints_and_others_do_not():
    a, b, c = StepFingerprints(), StepFingerprints(), StepFingerprints()
    stepped(a, seed=0, steps=3)
    stepped(b, seed=0, steps=3)
    stepped(c, seed=1, steps=3)
    assert torch.equal(a.record(), b.record())
    assert a.record().shape == (3, 2 * (1 + 4))  # weight and bias: a sum and four directions each
    assert not torch.isclose(a.record(), c.record()).all(dim=1).any()


def test_the_record_keeps_the_widest_optimizers_steps():
    prints = StepFingerprints()
    stepped(prints, seed=0, steps=2, width=8)
    stepped(prints, seed=0, steps=5, bias=False)  # a side optimizer over fewer parameters
    assert prints.record().shape[0] == 2


def test_keep_memory_private_makes_the_process_undumpable():
    code = (
        "import ctypes; from faultline_harness.guard import keep_memory_private; keep_memory_private();"
        "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"  # PR_GET_DUMPABLE
    )
    harness = Path(__file__).resolve().parents[3] / "sandbox" / "harness"
    env = {**os.environ, "PYTHONPATH": str(harness)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "0"

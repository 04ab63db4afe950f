"""The harness on CUDA with the local process backend: telemetry and diagnostics on a real GPU.

Runs wherever torch sees a CUDA device; elsewhere it is skipped with that reason.
"""

import pytest

from sandbox import runner, services

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.django_db,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: torch.cuda.is_available() is False"),
]

PROGRAM = """
import time
import torch
from faultline_harness import report

x = torch.randn(4096, 4096, device="cuda")
keep = [x @ x for _ in range(4)]
for step in range(6):
    report.step(step, loss=float(keep[-1].mean()))
    time.sleep(0.5)
"""


def test_cuda_memory_telemetry_and_a_memory_snapshot(settings):
    settings.SANDBOX_BACKEND = "process"
    settings.SANDBOX_GPUS = 1
    run = services.create_run(owner=None, files={"main.py": PROGRAM}, gpu="required", timeout_seconds=120)
    assert runner.execute_run(run.pk) == "passed", run.error_message
    samples = [e.data for e in run.events.filter(kind="cuda_memory")]
    assert samples, "no cuda_memory telemetry"
    assert max(s["allocated_bytes"] for s in samples) >= 5 * 4096 * 4096 * 4  # five fp32 4096² tensors
    assert all(s["reserved_bytes"] >= s["allocated_bytes"] for s in samples)

"""`nan-attention-mask-fp16`: the grader calls the submitted masked_attention itself, in fp16, on batches it
draws from the held-out seed, in a fresh interpreter; a probe file the job leaves behind is never read."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch
from django.conf import settings

from labs.grader_api import GradeContext
from labs.render import choose_params, render_files
from labs.spec import load_lab

SLUG = "nan-attention-mask-fp16"
LAB = Path(settings.LAB_CATALOG_DIR) / SLUG


def grader():
    spec = importlib.util.spec_from_file_location("grader_nan_attention", LAB / "grader.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def probe_of(tmp_path: Path, tree: str) -> dict:
    """The probe metrics for the lab's program/ or solution/ attention.py, as the grading entry copied it."""
    lab = load_lab(LAB).as_json()
    files = render_files({**lab["program"], **lab.get(tree, {})}, choose_params(SLUG, lab["params"], 0))
    (tmp_path / "submitted_code.json").write_text(json.dumps({"attention.py": files["attention.py"]}))
    return grader().probe_metrics(GradeContext(artifacts=tmp_path, params={}, seed=99, ranks=1))


def test_the_faulty_attention_is_caught_in_fp16(tmp_path):
    metrics = probe_of(tmp_path, "program")
    assert metrics["probe_nonfinite"] > 0


def test_the_fixed_attention_passes_every_probe_check(tmp_path):
    metrics = probe_of(tmp_path, "solution")
    assert metrics == {**metrics, "probe_nonfinite": 0.0, "probe_blind_rows_ok": 1.0, "probe_grads_finite": 1.0}
    assert metrics["probe_max_error"] <= 0.02


def test_a_probe_file_left_by_the_job_is_not_evidence(tmp_path):
    # A made-up "perfect" probe next to the faulty code changes nothing: the grader computes its own.
    torch.save({"out": torch.zeros(8, 2, 12, 16), "grads_finite": torch.tensor(1.0)}, tmp_path / "probe.pt")
    assert probe_of(tmp_path, "program")["probe_nonfinite"] > 0

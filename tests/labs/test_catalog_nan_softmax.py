"""`nan-softmax-overflow`: the grader's loss probe tells a stable cross-entropy from the cover-ups, and a
valid fix other than the reference passes.

The reference subtracts the row maximum in its hand-written log-softmax; torch's own `log_softmax` +
`nll_loss` must pass as well. The grader calls the submitted `cross_entropy` itself, in a fresh interpreter,
on logits from the held-out seed. The probe metrics are checked here on the lab's own `ops.py` variants
without Docker; the full grading of the alternative fix runs through gradefix with real Docker. Every cover-up in
bad_fixes/ scoring 0 % is what validatelab proves.
"""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest
import torch
from django.conf import settings
from django.core.management import call_command

from labs.grader_api import GradeContext
from labs.loader import refresh_question_links
from labs.render import choose_params, render_files
from labs.spec import load_lab
from tests.labs.helpers import publish

SLUG = "nan-softmax-overflow"
LAB = Path(settings.LAB_CATALOG_DIR) / SLUG
ALTERNATIVE = Path(__file__).parent / "fixtures" / "catalog_nan" / SLUG / "ops.py.tmpl"
HELD_OUT_SEED = 2024


def module_from(path: Path, name: str, text: str | None = None):
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(text if text is not None else path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


GRADER = module_from(LAB / "grader.py", "grader_nan_softmax_overflow")


def probe_metrics_of(ops: str, tmp_path: Path) -> dict:
    """What the grader makes of this ops.py, as the grading entry copied it before the job ran."""
    (tmp_path / "submitted_code.json").write_text(json.dumps({"ops.py": ops}), encoding="utf-8")
    return GRADER.probe_metrics(GradeContext(artifacts=tmp_path, params={}, seed=HELD_OUT_SEED, ranks=1))


def passes(metrics: dict) -> bool:
    return metrics["probe_nonfinite"] == 0 and metrics["probe_max_error"] <= 0.001  # the lab's two probe checks


def test_the_probe_logits_are_past_exps_limit():
    logits, _ = GRADER.probe_inputs(HELD_OUT_SEED + 1)
    assert logits.dtype == torch.float32 and logits.abs().max() > 710  # past exp's limit in float64 too


def test_a_probe_file_left_by_the_job_is_not_evidence(tmp_path):
    # A made-up "exact" probe beside the faulty code changes nothing: the grader runs the code itself.
    torch.save({"per_row": torch.zeros(64, dtype=torch.float64), "batch": torch.zeros((), dtype=torch.float64)},
               tmp_path / "probe.pt")  # fmt: skip
    assert probe_metrics_of((LAB / "program" / "ops.py").read_text(encoding="utf-8"), tmp_path)["probe_nonfinite"] > 0


def test_the_probe_fails_the_overflowing_and_clamped_losses_and_passes_stable_ones(tmp_path):
    faulty = (LAB / "program" / "ops.py").read_text(encoding="utf-8")
    spec = load_lab(LAB)  # fixes may be stored as patches against program/: the loader applies them
    reference = spec.solution["ops.py"]
    alternative = ALTERNATIVE.read_text(encoding="utf-8")
    clamped = spec.bad_fixes["clamp-logits"]["ops.py"]
    # A float64 cast inside the loss: exp then overflows only past 709, which the probe's logits exceed.
    in_float64 = faulty.replace("torch.exp(logits)", "torch.exp(logits.double())")
    results = {name: probe_metrics_of(ops, tmp_path) for name, ops in [
        ("faulty", faulty), ("reference", reference), ("alternative", alternative),
        ("clamped", clamped), ("float64", in_float64),
    ]}  # fmt: skip
    assert passes(results["reference"]) and passes(results["alternative"]), results
    assert results["faulty"]["probe_nonfinite"] > 0
    assert results["float64"]["probe_nonfinite"] > 0
    assert results["clamped"]["probe_nonfinite"] == 0 and results["clamped"]["probe_max_error"] > 0.1


@pytest.mark.django_db
@pytest.mark.docker
def test_log_softmax_with_nll_passes_as_a_graded_submission(tmp_path):
    spec = load_lab(LAB).as_json()
    seed = 1
    overlay = {"ops.py": ALTERNATIVE.read_text(encoding="utf-8")}
    assert overlay["ops.py"] != spec["solution"]["ops.py"]
    for name, text in render_files(overlay, choose_params(SLUG, spec["params"], seed)).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command("gradefix", SLUG, "--seed", str(seed), "--files", str(tmp_path), "--backend", "docker", stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    failed = [check["name"] for check in report["checks"] if not check["passed"]]
    assert report["passed"] is True and report["fix_percent"] == 100, failed


@pytest.mark.django_db
def test_the_lab_and_its_questions_link_both_ways(login, candidate):
    publish(SLUG)
    refresh_question_links()  # as validatelab does when it publishes
    client = login(candidate)
    lab_page = client.get(f"/labs/{SLUG}/").content.decode()
    for question in ("nan-loss-checklist", "gradient-explosion-vanishing"):
        assert f'href="/questions/{question}/"' in lab_page
        assert f'href="/labs/{SLUG}/"' in client.get(f"/questions/{question}/").content.decode()

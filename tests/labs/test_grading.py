"""Real runs of the example lab through the worker's runner, grader process and checks."""

from __future__ import annotations

from unittest import mock

import pytest

from labs import services
from labs.models import Attempt, LabRun, LabVersion
from labs.validation import validate_version
from questions.models import Question
from sandbox import runner
from sandbox.models import Run
from tests.labs.helpers import EXAMPLE, publish

pytestmark = pytest.mark.django_db

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), "process"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_validation_proves_fault_fix_and_cover_ups_then_publishes(settings, backend):
    settings.SANDBOX_BACKEND = backend
    version = LabVersion.objects.get(lab__slug=EXAMPLE)
    rows = {row.variant: row for row in validate_version(version, [0])}
    assert all(row.ok for row in rows.values()), rows
    assert {"loss-finite", "heldout"} <= set(rows["baseline"].failed_checks)
    assert rows["solution"].outcome == "pass" and rows["solution"].failed_checks == []
    assert "heldout" in rows["bad:nan-to-num-loss"].failed_checks  # hiding the NaN does not make it learn
    assert rows["bad:tiny-lr"].failed_checks == ["heldout"]
    version.refresh_from_db()
    assert version.validated_at is not None and version.lab.current_id == version.pk
    assert Question.objects.get(slug="nan-loss-checklist").has_lab


def submit(attempt: Attempt, files: dict) -> LabRun:
    with mock.patch("sandbox.services.enqueue_run"):
        services.save_files(attempt, files)
        lab_run = services.start_run(attempt, fix=True)
    runner.execute_run(lab_run.run_id)
    lab_run.refresh_from_db()
    return lab_run


def test_candidate_fix_is_graded_and_scored(settings, candidate):
    settings.SANDBOX_BACKEND = "process"
    attempt = services.start_attempt(candidate, publish())
    services.submit_diagnosis(attempt, "unnormalised-inputs", "Raw inputs with a large scale are never normalized.")
    services.reveal_hint(attempt, 0)
    fixed = dict(attempt.files)
    fixed["train.py"] = fixed["train.py"].replace("net = Net()\n", "net = Net()\nnet.fit_input_stats(x)\n")
    lab_run = submit(attempt, fixed)
    assert lab_run.run.status == Run.Status.PASSED and lab_run.passed
    assert {c["name"]: c["passed"] for c in lab_run.checks} == {
        "finished": True, "exit-ok": True, "loss-finite": True, "steps": True, "trained": True, "heldout": True
    }  # fmt: skip
    detail = lab_run.score_detail
    assert detail["fix"] == 100 and detail["hints"] == 5
    assert lab_run.score == round(0.6 * 100 + 0.4 * detail["diagnosis"] - 5)
    attempt.refresh_from_db()
    assert attempt.status == Attempt.Status.PASSED and attempt.best_score == lab_run.score


def test_cover_up_fails_and_is_flagged_for_reviewers(settings, candidate):
    settings.SANDBOX_BACKEND = "process"
    attempt = services.start_attempt(candidate, publish())
    covered = dict(attempt.files)
    covered["train.py"] = covered["train.py"].replace(
        "loss = torch.nn.functional.mse_loss(net(x[idx]), y[idx])",
        "loss = torch.nan_to_num(torch.nn.functional.mse_loss(net(x[idx]), y[idx]), nan=0.0)",
    )
    lab_run = submit(attempt, covered)
    assert lab_run.run.status == Run.Status.FAILED and lab_run.passed is False
    failed = {c["name"]: c for c in lab_run.checks if not c["passed"]}
    assert "heldout" in failed and failed["heldout"]["measured"] != "not measured"
    assert [flag["pattern"] for flag in lab_run.flags] == ["nan_to_num"]


def test_grader_crash_is_a_platform_error_not_counted(settings, candidate):
    settings.SANDBOX_BACKEND = "process"
    lab = publish()
    spec = lab.current.spec
    spec["grader_source"] = "def evaluate(ctx):\n    raise RuntimeError('grader bug')\n"
    LabVersion.objects.filter(pk=lab.current_id).update(spec=spec)
    attempt = services.start_attempt(candidate, lab)
    lab_run = submit(attempt, attempt.files)
    assert lab_run.run.status == Run.Status.ERROR
    assert "platform fault" in lab_run.run.error_message and "grader bug" in lab_run.run.error_message
    assert lab_run.passed is None
    settings.LAB_RUNS_PER_HOUR = 1  # the errored run does not use up the quota
    with mock.patch("sandbox.services.enqueue_run"):
        services.start_run(attempt)


@pytest.mark.parametrize("kind", ["validate", "fix"])
def test_hidden_files_and_grader_share_one_hidden_seed(candidate, kind):
    """The seed rendered into hidden probe files is the one the grader process gets."""
    from labs.models import Lab
    from labs.render import grader_seed
    from labs.validation import run_variant

    lab = next(lab for lab in Lab.objects.all() if "grader_seed" in str(lab.versions.first().spec["hidden"]))
    version = lab.versions.order_by("-number").first()
    with mock.patch("labs.validation.execute_run"), mock.patch("sandbox.services.enqueue_run"):
        if kind == "validate":
            lab_run = run_variant(version, 3, "solution")
        else:
            attempt = services.start_attempt(candidate, publish(lab.slug))
            lab_run = services.start_run(attempt, fix=True)
    hidden_seed = grader_seed(lab.slug, lab_run.seed, lab_run.grader_nonce)
    assert lab_run.grader_nonce != 0
    assert any(f"= {hidden_seed}" in lab_run.run.files[name] for name in version.spec["hidden"])


def test_memory_samples_of_an_exiting_rank_are_not_measurements():
    from labs.grading import gather_outcome
    from sandbox.models import RunEvent

    run = Run.objects.create(files={"main.py": "pass"}, status=Run.Status.PASSED)
    samples = [(t * 0.5, (100 + 10 * t) * 2**20) for t in range(20)] + [(10.0, 0)]
    RunEvent.objects.bulk_create(
        RunEvent(run=run, seq=i + 1, kind="memory", rank=0, t=t, data={"rss_bytes": size, "pss_bytes": None})
        for i, (t, size) in enumerate(samples)
    )
    outcome = gather_outcome(run)
    assert len(outcome.memory) == 20 and all(size > 0 for _, size in outcome.memory)

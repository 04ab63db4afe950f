"""Real runs of the example lab through the worker's runner, grader process and checks."""

from __future__ import annotations

import json
from unittest import mock

import pytest

from labs import services
from labs.models import Attempt, Lab, LabRun, LabVersion
from labs.validation import validate_version
from questions.models import Question
from sandbox import runner
from sandbox.models import Run, RunArtifact
from tests.labs.helpers import EXAMPLE, publish

pytestmark = pytest.mark.django_db

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), "process"]


EXAMPLE_CHECKS = [
    {"name": "finished", "type": "finished_in_time", "options": {}},
    {"name": "exit-ok", "type": "ranks_exit_zero", "options": {}},
    {"name": "loss-finite", "type": "loss_finite", "options": {"min_reports": 400}},
    {"name": "steps", "type": "counter", "options": {"counter": "optimizer_steps", "op": ">=", "value": 400}},
    {"name": "trained", "type": "metric", "options": {"metric": "weights_finite", "op": "==", "value": 1}},
    {"name": "heldout", "type": "metric", "options": {"metric": "heldout_mse_ratio", "op": "<=", "value": 4}},
]


def example_version(bad_fixes: list[str], gate: bool) -> LabVersion:
    """The example lab with its checks spelt out here (held-out quality a gate or not) and some of its cover-ups."""
    latest = LabVersion.objects.filter(lab__slug=EXAMPLE).order_by("-number").first()
    spec = dict(latest.spec)
    spec["checks"] = [{**check, "gate": gate and check["name"] == "heldout"} for check in EXAMPLE_CHECKS]
    spec["bad_fixes"] = {name: latest.spec["bad_fixes"][name] for name in bad_fixes}
    return LabVersion.objects.create(
        lab=latest.lab, number=latest.number + 1, content_hash=f"{gate}{bad_fixes}".ljust(64, "x"), spec=spec
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_validation_proves_fault_fix_and_cover_ups_then_publishes(settings, backend):
    settings.SANDBOX_BACKEND = backend
    version = example_version(["tiny-lr", "nan-to-num-loss"], gate=True)
    rows = {row.variant: row for row in validate_version(version, [0])}
    assert all(row.ok for row in rows.values()), rows
    version.refresh_from_db()
    # loss-finite and steps are what the program reported: never distinguishing, whatever the baseline did.
    assert version.distinguishing == ["trained", "heldout"] or version.distinguishing == ["heldout"]
    assert "heldout" in rows["baseline"].failed_checks and rows["baseline"].fix_percent == 0
    assert rows["solution"].outcome == "pass" and rows["solution"].failed_checks == []
    assert rows["solution"].fix_percent == 100
    assert "heldout" in rows["bad:nan-to-num-loss"].failed_checks  # hiding the NaN does not make it learn
    assert rows["bad:tiny-lr"].failed_checks == ["heldout"] and rows["bad:tiny-lr"].fix_percent == 0
    assert version.validated_at is not None and version.lab.current_id == version.pk
    assert Question.objects.get(slug="nan-loss-checklist").has_lab


def test_validation_refuses_a_lab_where_a_cover_up_earns_credit(settings):
    """Without the gate, "trained" distinguishes and a learning rate too small to learn earns it: 50 %."""
    settings.SANDBOX_BACKEND = "process"
    version = example_version(["tiny-lr"], gate=False)
    rows = {row.variant: row for row in validate_version(version, [0])}
    version.refresh_from_db()
    if version.distinguishing != ["trained", "heldout"]:
        pytest.fail(f"the faulty program should fail both grader checks, distinguishing: {version.distinguishing}")
    tiny = rows["bad:tiny-lr"]
    assert tiny.outcome == "fail" and tiny.fix_percent == 50 and not tiny.ok
    assert "scores 50 %" in tiny.problem
    assert version.validated_at is None and version.lab.current_id != version.pk


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
    # The run ended when its output did; it finished once graded.
    assert lab_run.run.started_at < lab_run.run.ended_at < lab_run.run.finished_at
    checks = {c["name"]: c for c in lab_run.checks}
    assert all(c["passed"] for c in checks.values()), checks
    assert all(c["source"] for c in checks.values())
    # Published without validation in this test: every check but the program's own reports counts.
    assert {name for name, c in checks.items() if c["counts"] == "display"} == {
        name for name, c in checks.items() if c["type"] in ("loss_finite", "counter")
    }
    assert {c["counts"] for c in checks.values()} <= {"display", "distinguishing"}
    assert lab_run.fix_percent == 100 and lab_run.heldout_seed is not None
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


ECHO_GRADER = """
def evaluate(ctx):
    return {"seed_low": ctx.seed % 2**20, "seed_high": ctx.seed // 2**42, "probe_low": ctx.probe_seed % 2**20}
"""


def test_hidden_files_carry_nothing_of_the_heldout_seed(settings, candidate):
    """Two gradings of one attempt: each draws its own held-out seed, stores it and hands it to the grader,
    while the hidden files both runs got are byte-identical, rendered from the public seed alone."""
    from labs.grading import grade_run
    from labs.render import probe_seed

    settings.SANDBOX_BACKEND = "process"
    lab = next(lab for lab in Lab.objects.all() if "probe_seed" in str(lab.versions.first().spec["hidden"]))
    lab = publish(lab.slug)
    spec = lab.current.spec
    spec["grader_source"] = ECHO_GRADER
    LabVersion.objects.filter(pk=lab.current_id).update(spec=spec)
    attempt = services.start_attempt(candidate, lab)
    gradings = []
    for _ in range(2):
        with mock.patch("sandbox.services.enqueue_run"):
            lab_run = services.start_run(attempt, fix=True)
        Run.objects.filter(pk=lab_run.run_id).update(status=Run.Status.GRADING)
        grade_run(lab_run.run_id)  # as the runner would once the program ended (it saved nothing)
        Run.objects.filter(pk=lab_run.run_id).update(status=Run.Status.FAILED)
        lab_run.refresh_from_db()
        gradings.append(lab_run)
    first, second = gradings
    assert first.heldout_seed and second.heldout_seed and first.heldout_seed != second.heldout_seed
    for lab_run in gradings:
        assert lab_run.metrics["seed_low"] == lab_run.heldout_seed % 2**20
        assert lab_run.metrics["seed_high"] == lab_run.heldout_seed // 2**42
        assert lab_run.metrics["probe_low"] == probe_seed(lab.slug, attempt.seed) % 2**20
    hidden = sorted(spec["hidden"])
    assert [first.run.files[name] for name in hidden] == [second.run.files[name] for name in hidden]
    assert {name: first.run.files[name] for name in hidden} == services.hidden_files(spec, attempt.seed)
    for lab_run in gradings:
        for derived in (lab_run.heldout_seed, lab_run.heldout_seed + 1, lab_run.heldout_seed % 2**32):
            assert not any(str(derived) in text for text in lab_run.run.files.values())


CODE_GRADER = """
def evaluate(ctx):
    code = ctx.submitted_code()
    return {"files": len(code), "train_len": len(code.get("train.py", "")), "forged": float("FORGED" in str(code))}
"""


def test_the_grader_gets_the_code_the_run_started_with_not_a_copy_the_program_left(settings, candidate):
    from labs.grading import grade_run

    settings.SANDBOX_BACKEND = "process"
    lab = publish("correctness-missing-eval")  # its graded runs add a hidden entry to the candidate's files
    spec = lab.current.spec
    spec["grader_source"] = CODE_GRADER
    LabVersion.objects.filter(pk=lab.current_id).update(spec=spec)
    attempt = services.start_attempt(candidate, lab)
    with mock.patch("sandbox.services.enqueue_run"):
        lab_run = services.start_run(attempt, fix=True)
    forged = json.dumps({"train.py": "FORGED", "model.py": "FORGED"}).encode()
    RunArtifact.objects.create(run_id=lab_run.run_id, name="submitted_code.json", size=len(forged), content=forged)
    Run.objects.filter(pk=lab_run.run_id).update(status=Run.Status.GRADING)
    grade_run(lab_run.run_id)
    lab_run.refresh_from_db()
    files = lab_run.run.files
    submitted = [name for name in files if name.endswith(".py") and name not in spec["hidden"]]
    assert set(spec["hidden"]) and all(name in files for name in spec["hidden"])  # the graded run had them
    assert lab_run.metrics == {"files": len(submitted), "train_len": len(files["train.py"]), "forged": 0.0}
    assert len(submitted) < len([name for name in files if name.endswith(".py")])


def test_memory_samples_of_an_exiting_rank_are_not_measurements():
    from labs.run_result import recorded_result
    from sandbox.models import RunEvent

    run = Run.objects.create(files={"main.py": "pass"}, status=Run.Status.PASSED)
    samples = [(t * 0.5, (100 + 10 * t) * 2**20) for t in range(20)] + [(10.0, 0)]
    RunEvent.objects.bulk_create(
        RunEvent(run=run, seq=i + 1, kind="memory", rank=0, t=t, data={"rss_bytes": size, "pss_bytes": None})
        for i, (t, size) in enumerate(samples)
    )
    memory = recorded_result(run).memory
    assert len(memory) == 20 and all(size > 0 for _, size in memory)


def test_a_recorded_result_keeps_the_launchers_store_counts():
    from labs.run_result import recorded_result
    from sandbox.models import RunEvent

    run = Run.objects.create(files={"main.py": "pass"}, status=Run.Status.PASSED)
    counts = {"record_store": {"reads": 12288, "records": 2048}}
    RunEvent.objects.create(run=run, seq=1, kind="end", rank=None, t=5.0, data={"kind": "end", "services": counts})
    assert recorded_result(run).service_counts == counts

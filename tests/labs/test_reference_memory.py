"""A leak check's ceiling: the reference fix's memory on the same seed, measured by the platform once per seed."""

from __future__ import annotations

from unittest import mock

import pytest
from django.utils import timezone

from labs import services
from labs.models import Lab, LabRun, LabVersion, ReferenceMemory
from sandbox import runner
from sandbox.models import Run
from tests.labs.helpers import EXAMPLE

pytestmark = pytest.mark.django_db

# Generous growth (the example lab does not leak) and no warm-up: the ceiling is what is under test.
MEMORY_CHECK = {
    "name": "memory-flat", "type": "memory_growth",
    "options": {"max_growth_mib": 1000, "warmup_cpu_s": 0, "min_samples": 1, "max_over_reference_mib": 64},
}  # fmt: skip
FIX = ("net = Net()\n", "net = Net()\nnet.fit_input_stats(x)\n")
# What a leak hidden behind a reserve looks like to the check: a level far above the reference's.
RESERVE = ("net = Net()\n", 'net = Net()\nreserve = bytearray(b"x" * (300 * 2**20))\n')


@pytest.fixture
def attempt(settings, candidate):
    settings.SANDBOX_BACKEND = "process"
    latest = LabVersion.objects.filter(lab__slug=EXAMPLE).order_by("-number").first()
    spec = {**latest.spec, "checks": [*latest.spec["checks"], MEMORY_CHECK]}
    version = LabVersion.objects.create(
        lab=latest.lab, number=latest.number + 1, content_hash="m" * 64, spec=spec, validated_at=timezone.now()
    )
    Lab.objects.filter(pk=latest.lab_id).update(current=version)
    return services.start_attempt(candidate, Lab.objects.get(pk=latest.lab_id))


def submit(attempt, *edits) -> LabRun:
    files = dict(attempt.files)
    for old, new in edits:
        files["train.py"] = files["train.py"].replace(old, new, 1)
    with mock.patch("sandbox.services.enqueue_run"):
        services.save_files(attempt, files)
        lab_run = services.start_run(attempt, fix=True)
    runner.execute_run(lab_run.run_id)
    lab_run.refresh_from_db()
    return lab_run


def memory_check(lab_run: LabRun) -> dict:
    return next(c for c in lab_run.checks if c["name"] == "memory-flat")


def references(attempt) -> list[LabRun]:
    return list(LabRun.objects.filter(version=attempt.version, seed=attempt.seed, variant="solution"))


def test_the_first_grading_on_a_seed_measures_the_reference_fix_and_later_ones_reuse_it(attempt):
    fixed = submit(attempt, FIX)
    assert fixed.passed, fixed.checks
    [reference] = references(attempt)
    assert reference.passed and reference.run.status == Run.Status.PASSED
    [level] = ReferenceMemory.objects.filter(version=attempt.version, seed=attempt.seed)
    assert level.source == "process-tree" and level.check_name == "memory-flat" and level.level_mib > 0
    assert f"the reference fix's {level.level_mib:.4g} + 64" in memory_check(fixed)["threshold"]

    ballooned = submit(attempt, FIX, RESERVE)
    check = memory_check(ballooned)
    assert not ballooned.passed and not check["passed"], check
    assert "above the reference fix" in check["measured"]
    assert len(references(attempt)) == 1  # measured once per seed


def test_a_reference_that_cannot_be_measured_is_a_platform_error_not_a_fail(attempt):
    def unmeasured(version, seed, variant, worker_name, priority):
        return LabRun(run=Run(status=Run.Status.ERROR, error_message="the sandbox could not start"))

    with mock.patch("labs.reference.run_variant", side_effect=unmeasured):
        lab_run = submit(attempt, FIX)
    assert lab_run.run.status == Run.Status.ERROR and lab_run.passed is None
    assert "platform fault" in lab_run.run.error_message
    assert "reference fix's memory" in lab_run.run.error_message


def test_the_faulty_program_is_not_worth_a_reference_run(attempt):
    """Validation grades the faulty program before the reference on each seed; that grading does not run
    the reference (the solution row right after it measures it), so validation runs it once per seed."""
    from labs.variant_runs import run_variant

    faulty = run_variant(attempt.version, attempt.seed, "baseline")
    assert faulty.passed is not None and references(attempt) == []
    assert "no reference level" in memory_check(faulty)["threshold"]
    run_variant(attempt.version, attempt.seed, "solution")
    assert len(references(attempt)) == 1
    assert ReferenceMemory.objects.filter(version=attempt.version, seed=attempt.seed).exists()

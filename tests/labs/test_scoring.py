"""fix % counts only checks that tell a fix from the fault; one function writes an attempt's scores."""

from __future__ import annotations

import pytest
from django.utils import timezone

from labs import services
from labs.models import Attempt, Lab, LabRun
from labs.scoring import assign_roles, fix_passed, fix_percent, rescore_attempt
from sandbox.models import Run
from tests.labs.helpers import publish

pytestmark = pytest.mark.django_db


def result(name: str, passed: bool, type_: str = "metric", gate: bool = False) -> dict:
    return {"name": name, "type": type_, "passed": passed, "gate": gate}


# The faulty baseline of a NaN lab fails "heldout" and "trained" on every seed; it exits 0 and runs its steps.
DISTINGUISHING = ["trained", "heldout"]


def score(*results: dict, distinguishing=DISTINGUISHING) -> tuple[bool, int, dict]:
    checks = assign_roles(list(results), distinguishing)
    return fix_passed(checks), fix_percent(checks), {c["name"]: c["counts"] for c in checks}


def test_no_training_scores_zero_not_fifty():
    """A 1e-7 learning rate: exits 0 (precondition), weights move a hair (trained passes), nothing is learnt."""
    passed, percent, roles = score(
        result("exit-ok", True, "ranks_exit_zero"), result("trained", True), result("heldout", False)
    )
    assert roles == {"exit-ok": "precondition", "trained": "distinguishing", "heldout": "distinguishing"}
    assert not passed and percent == 50  # without a gate, half the distinguishing checks
    passed, percent, _ = score(
        result("exit-ok", True, "ranks_exit_zero"), result("trained", True), result("heldout", False, gate=True)
    )
    assert not passed and percent == 0  # the lab marks held-out quality as a gate


def test_a_failed_precondition_scores_zero_and_a_passed_one_adds_nothing():
    assert score(result("exit-ok", False, "ranks_exit_zero"), result("trained", True), result("heldout", True))[1] == 0
    assert score(result("exit-ok", True, "ranks_exit_zero"), result("trained", True), result("heldout", False))[1] == 50


def test_display_checks_never_count_either_way():
    forged = [result("loss-finite", True, "loss_finite"), result("steps", True, "counter")]
    passed, percent, roles = score(*forged, result("trained", False), result("heldout", False))
    assert (passed, percent) == (False, 0)
    assert roles["loss-finite"] == roles["steps"] == "display"
    honest_nan = [result("loss-finite", False, "loss_finite"), result("steps", False, "counter")]
    assert score(*honest_nan, result("trained", True), result("heldout", True))[:2] == (True, 100)


def test_every_counting_check_is_distinguishing_before_validation():
    passed, percent, roles = score(
        result("exit-ok", True, "ranks_exit_zero"), result("heldout", False), result("steps", True, "counter"),
        distinguishing=None,
    )  # fmt: skip
    assert roles == {"exit-ok": "distinguishing", "heldout": "distinguishing", "steps": "display"}
    assert (passed, percent) == (False, 50)


def graded_fix(attempt: Attempt, fix_percent_: int, passed: bool) -> LabRun:
    run = Run.objects.create(files={"main.py": "pass"}, status=Run.Status.PASSED, purpose="grade")
    return LabRun.objects.create(
        run=run, version=attempt.version, attempt=attempt, kind=LabRun.Kind.FIX, seed=attempt.seed,
        fix_percent=fix_percent_, passed=passed, graded_at=timezone.now(),
    )  # fmt: skip


def test_rescore_is_the_one_writer_of_scores_and_a_pass_never_reopens(candidate):
    attempt = services.start_attempt(candidate, publish())
    weak, strong = graded_fix(attempt, 50, False), graded_fix(attempt, 100, True)
    rescore_attempt(attempt.pk, "fix")
    attempt.refresh_from_db()
    assert attempt.best_score == 60 and attempt.status == Attempt.Status.PASSED
    services.reveal_hint(attempt, 0)  # a hint taken later costs every fix, the best one too
    attempt.refresh_from_db()
    cost = attempt.version.spec["hints"][0]["cost"]
    assert attempt.best_score == 60 - cost
    assert LabRun.objects.get(pk=weak.pk).score == 30 - cost
    assert LabRun.objects.get(pk=strong.pk).score_detail["hints"] == cost
    LabRun.objects.filter(pk=strong.pk).update(passed=False)
    rescore_attempt(attempt.pk, "fix")
    attempt.refresh_from_db()
    assert attempt.status == Attempt.Status.PASSED  # guarded: open → passed only
    assert not Attempt.mark_passed(attempt.pk)


def test_publish_never_moves_a_lab_back_to_an_older_version():
    lab = publish()
    newer = lab.current
    older = lab.versions.create(number=newer.number - 1 if newer.number > 1 else 0, content_hash="0" * 64, spec={})
    assert not Lab.publish(older)
    assert Lab.objects.get(pk=lab.pk).current_id == newer.pk
    assert Lab.publish(newer)

"""Each check type reports the measured value beside its threshold, and fails honestly."""

from __future__ import annotations

import math

import pytest

from labs.checks import Outcome, run_checks


def outcome(**fields) -> Outcome:
    base = {"ranks": 2, "exit_codes": {"0": 0, "1": 0}, "timed_out": False, "oom_killed": False,
            "duration": 10.0, "timeout_seconds": 60}  # fmt: skip
    return Outcome(**{**base, **fields})


def check(type_, outcome_, values=None, **options):
    [result] = run_checks([{"name": "c", "type": type_, "options": options}], outcome_, values or {})
    return result


def test_finished_in_time():
    assert check("finished_in_time", outcome()).passed
    timed_out = check("finished_in_time", outcome(timed_out=True))
    assert not timed_out.passed and timed_out.measured == "killed at the deadline"
    assert not check("finished_in_time", outcome(duration=30.0), max_seconds=20).passed


def test_ranks_exit_zero_needs_every_rank():
    assert check("ranks_exit_zero", outcome()).passed
    missing = check("ranks_exit_zero", outcome(exit_codes={"0": 0}))
    assert not missing.passed and "rank 1: none" in missing.measured
    assert not check("ranks_exit_zero", outcome(oom_killed=True)).passed


def test_loss_finite():
    assert check("loss_finite", outcome(losses=[1.0, 0.5]), min_reports=2).passed
    assert not check("loss_finite", outcome(losses=[1.0, math.nan])).passed
    assert not check("loss_finite", outcome(losses=[1.0]), min_reports=5).passed


def test_metric_uses_grader_values_and_reasons():
    good = outcome(metrics={"r2": 0.93})
    assert check("metric", good, metric="r2", op=">=", value=0.9).passed
    assert not check("metric", outcome(metrics={"r2": math.nan}), metric="r2", op=">=", value=0.9).passed
    missing = check(
        "metric", outcome(grader_error="the program did not save model.pt"), metric="r2", op=">=", value=0.9
    )
    assert not missing.passed and missing.detail == "the program did not save model.pt"


def test_metric_threshold_from_a_parameter():
    result = check("metric", outcome(metrics={"steps": 40}), {"n": 50}, metric="steps", op=">=", value="{{ n }}")
    assert not result.passed and result.threshold == "steps >= 50"


def test_memory_slope_separates_a_leak_from_a_flat_line():
    flat = [(t * 0.5, 500e6 + (t % 2) * 1e5) for t in range(40)]
    leak = [(t * 0.5, 500e6 + t * 0.5 * 20 * 2**20) for t in range(40)]
    assert check("memory_slope", outcome(memory=flat), max_mib_per_s=2).passed
    result = check("memory_slope", outcome(memory=leak), max_mib_per_s=2)
    assert not result.passed and result.measured.startswith("20")
    assert not check("memory_slope", outcome(memory=flat[:5]), max_mib_per_s=2).passed


def test_speedup_against_the_validated_baseline():
    assert check("speedup", outcome(duration=5.0, baseline={"duration": 12.0}), min_ratio=2).passed
    slow = check("speedup", outcome(duration=9.0, baseline={"duration": 12.0}), min_ratio=2)
    assert not slow.passed and "faulty baseline 12 s" in slow.detail
    assert not check("speedup", outcome(timed_out=True, baseline={"duration": 12.0}), min_ratio=2).passed


@pytest.mark.parametrize(("value", "passed"), [(400, True), (120, False)])
def test_counter(value, passed):
    assert check("counter", outcome(counters={"optimizer_steps": value}), counter="optimizer_steps",
                 op=">=", value=400).passed is passed  # fmt: skip
    assert not check("counter", outcome(), counter="optimizer_steps", op=">=", value=1).passed

"""Each check type reports the measured value beside its threshold and its source, and fails honestly."""

from __future__ import annotations

import dataclasses
import math

import pytest

from labs.checks import CHECK_TYPES, REPORTED_BY_PROGRAM, Outcome, Reported, run_checks
from labs.render import render_check
from sandbox.judging import RunResult

MEASURED = {"exit_codes", "timed_out", "oom_killed", "duration", "memory", "cancelled", "service_counts"}


def outcome(losses=None, counters=None, **fields) -> Outcome:
    result = RunResult(
        exit_code=0, exit_codes={"0": 0, "1": 0}, timed_out=False, oom_killed=False, cancelled=False, duration=10.0,
        memory=[], output_full=False, artifacts_skipped=[],
    )  # fmt: skip
    result = dataclasses.replace(result, **{k: v for k, v in fields.items() if k in MEASURED})
    rest = {k: v for k, v in fields.items() if k not in MEASURED}
    reported = Reported(losses=losses or [], counters=counters or {})
    return Outcome(ranks=2, timeout_seconds=60, result=result, reported=reported, **rest)


def check(type_, outcome_, values=None, **options):
    rendered = render_check({"name": "c", "type": type_, "options": options}, values or {})
    [result] = run_checks([rendered], outcome_)
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
def test_counter_is_shown_as_reported_by_the_program(value, passed):
    assert check("counter", outcome(counters={"optimizer_steps": value}), counter="optimizer_steps",
                 op=">=", value=400).passed is passed  # fmt: skip
    assert not check("counter", outcome(), counter="optimizer_steps", op=">=", value=1).passed
    assert check("counter", outcome(counters={"optimizer_steps": 1}), counter="optimizer_steps", op=">=",
                 value=1).source == REPORTED_BY_PROGRAM  # fmt: skip


def test_only_loss_finite_and_counter_read_what_the_program_reported():
    """A forged report (huge counters, tidy losses) changes display checks only; every other type reads
    measurements, so the same forged reports leave its verdict exactly as it was."""
    honest = outcome(memory=[(t * 0.5, 1e8 + t * 3e7) for t in range(30)], metrics={"r2": 0.1})
    forged = dataclasses.replace(honest, reported=Reported(losses=[0.1] * 10_000, counters={"optimizer_steps": 1e9}))
    options = {
        "finished_in_time": {}, "ranks_exit_zero": {}, "metric": {"metric": "r2", "op": ">=", "value": 0.9},
        "memory_slope": {"max_mib_per_s": 2}, "speedup": {"min_ratio": 2}, "loss_finite": {"min_reports": 400},
        "counter": {"counter": "optimizer_steps", "op": ">=", "value": 400},
        "store_reads": {"count": "records", "op": ">=", "value": 2048},
        "service_count": {"service": "checkpoint_store", "count": "min_rank_loads", "op": ">=", "value": 1},
    }  # fmt: skip
    assert set(options) == set(CHECK_TYPES)
    for type_, kind in CHECK_TYPES.items():
        before, after = check(type_, honest, **options[type_]), check(type_, forged, **options[type_])
        if kind.display_only:
            assert after.passed and not before.passed and after.source == REPORTED_BY_PROGRAM, type_
        else:
            assert (before.passed, before.measured) == (after.passed, after.measured), type_
            assert after.source and after.source != REPORTED_BY_PROGRAM, type_


def test_store_reads_counts_what_the_store_in_the_launcher_served():
    served = outcome(service_counts={"record_store": {"reads": 12288, "records": 2048}})
    assert check("store_reads", served, count="records", op=">=", value=2048).passed
    assert check("store_reads", served, op=">=", value=12288).passed  # reads by default
    short = check("store_reads", outcome(service_counts={"record_store": {"reads": 0, "records": 0}}),
                  count="records", op=">=", value=2048)  # fmt: skip
    assert not short.passed and short.measured == "0" and short.threshold == "store records >= 2048"
    assert "launcher" in short.source
    # a run without the store (or from before it existed) is not measured, never passed
    missing = check("store_reads", outcome(), count="records", op=">=", value=1)
    assert not missing.passed and missing.measured == "not measured"


def test_service_count_reads_what_a_service_in_the_launcher_counted():
    counts = {"checkpoint_store": {"saves": 1, "loads": 1, "loads_rank0": 1, "loads_rank1": 0, "min_rank_loads": 0}}
    result = check("service_count", outcome(service_counts=counts), service="checkpoint_store",
                   count="min_rank_loads", op=">=", value=1)  # fmt: skip
    assert not result.passed and result.measured == "0"
    assert result.threshold == "checkpoint_store min_rank_loads >= 1" and "launcher" in result.source
    assert check("service_count", outcome(service_counts=counts), service="checkpoint_store", count="saves",
                 op="==", value=1).passed  # fmt: skip
    # a run without that service, or a count it does not keep, is not measured and never passes
    missing = check("service_count", outcome(), service="checkpoint_store", count="saves", op=">=", value=0)
    assert not missing.passed and missing.measured == "not measured"


def test_store_reads_refuses_an_unknown_count():
    assert "count must be one of reads, records" in CHECK_TYPES["store_reads"].validate(
        {"count": "bytes", "op": ">=", "value": 1}
    )


def test_gate_is_carried_only_by_checks_that_count():
    checks = [
        {"name": "held", "type": "metric", "options": {"metric": "r2", "op": ">=", "value": 0.9}, "gate": True},
        {"name": "steps", "type": "counter", "options": {"counter": "n", "op": ">=", "value": 1}, "gate": True},
    ]
    held, steps = run_checks(checks, outcome())
    assert held.gate and not steps.gate


def test_memory_freed_just_before_exit_still_reads_as_the_leak_it_was():
    # 22 MiB/s for 18 s, then everything released in the last samples: a fitted line alone comes out low.
    grow = [(t * 0.5, 500e6 + t * 0.5 * 22 * 2**20) for t in range(36)]
    freed = grow + [(18.5, 500e6), (19.0, 500e6), (19.5, 500e6), (20.0, 500e6), (20.5, 500e6)]
    result = check("memory_slope", outcome(memory=freed), max_mib_per_s=2, warmup_s=0)
    assert not result.passed and "peak rate" in result.detail
    assert float(result.measured.split()[0]) > 15


def test_an_early_spike_of_a_flat_program_is_not_a_leak():
    flat = [(t * 0.5, 500e6) for t in range(40)]
    spiky = [(t, v + (40 * 2**20 if t == 1.0 else 0)) for t, v in flat]  # one 40 MiB blip, then flat for 18 s
    result = check("memory_slope", outcome(memory=spiky), max_mib_per_s=3, warmup_s=0)
    assert result.passed, result


def test_check_texts_are_stored_in_english_and_shown_in_the_readers_language():
    import json

    from django.utils import translation

    from labs.checks import localized

    results = [
        check("finished_in_time", outcome(duration=12.5), max_seconds=20),
        check("finished_in_time", outcome(timed_out=True)),
        check("ranks_exit_zero", outcome(oom_killed=True, exit_codes={"0": 137, "1": 0})),
        check("memory_slope", outcome(memory=[(t, (100 + t) * 1048576) for t in range(20)]), max_mib_per_s=0.5),
        check("speedup", outcome(duration=5.0, baseline={"duration": 20.0}), min_ratio=2),
        check("metric", outcome(), metric="heldout_r2", op=">=", value=0.8),
    ]
    stored = json.loads(json.dumps([r.as_dict() for r in results]))  # as a LabRun keeps them
    assert stored[0]["measured"] == "12.5 s" and stored[0]["threshold"] == "≤ 20 s"
    assert stored[3]["threshold"] == "≤ 0.5 MiB/s after 3 s"
    with translation.override("en"):
        assert [localized(c)["threshold"] for c in stored] == [c["threshold"] for c in stored]
    with translation.override("zh-hans"):
        shown = [localized(c) for c in stored]
    assert shown[0]["measured"] == "12.5 秒" and shown[0]["threshold"] == "≤ 20 秒"
    assert shown[1]["measured"] == "到截止时间被终止"
    assert shown[2]["measured"].endswith("（内存不足）") and shown[2]["threshold"] == "每个 rank 都以 0 退出"
    assert shown[3]["threshold"] == "预热 3 秒后 ≤ 0.5 MiB/s" and "拟合斜率" in shown[3]["detail"]
    assert shown[4]["threshold"] == "比故障程序快 2 倍及以上" and "故障程序基线 20 秒" in shown[4]["detail"]
    assert shown[5]["measured"] == "未测得" and shown[5]["threshold"] == "heldout_r2 >= 0.8"
    # A result stored before texts were kept is shown as it was stored.
    assert localized({"measured": "old", "threshold": "x"}) == {"measured": "old", "threshold": "x"}


@pytest.mark.parametrize(
    ("type_", "fields", "options", "expected"),
    [
        ("metric", {"metrics": {"r2": 0.9}}, {"metric": "r2", "op": ">=", "value": 0.8}, 0.125),
        ("metric", {"metrics": {"r2": 0.6}}, {"metric": "r2", "op": ">=", "value": 0.8}, -0.25),
        ("metric", {"metrics": {"err": 0.5}}, {"metric": "err", "op": "<=", "value": 2}, 0.75),
        ("metric", {"metrics": {"bad": 3}}, {"metric": "bad", "op": "<=", "value": 0}, None),  # no scale at 0
        ("metric", {"metrics": {"bad": 0}}, {"metric": "bad", "op": "==", "value": 0}, None),  # exact
        ("metric", {"metrics": {"r2": math.nan}}, {"metric": "r2", "op": ">=", "value": 0.8}, None),
        ("finished_in_time", {"duration": 15.0}, {"max_seconds": 20}, 0.25),
        ("finished_in_time", {"timed_out": True}, {"max_seconds": 20}, None),
        ("speedup", {"duration": 4.0, "baseline": {"duration": 12.0}}, {"min_ratio": 2}, 0.5),
    ],
)
def test_margin_is_the_distance_from_the_threshold_on_the_passing_side(type_, fields, options, expected):
    result = check(type_, outcome(**fields), **options)
    assert result.margin == (pytest.approx(expected) if expected is not None else None)
    assert result.as_dict()["margin"] == result.margin
    if result.margin is not None:
        assert (result.margin >= 0) is result.passed or result.margin == 0


def test_memory_margin_reads_the_judged_rate_against_the_limit():
    flat = [(t * 0.5, 500e6) for t in range(40)]
    leak = [(t * 0.5, 500e6 + t * 0.5 * 20 * 2**20) for t in range(40)]
    assert check("memory_slope", outcome(memory=flat), max_mib_per_s=2).margin == pytest.approx(1.0)
    assert check("memory_slope", outcome(memory=leak), max_mib_per_s=2).margin == pytest.approx(-9.0, rel=0.01)

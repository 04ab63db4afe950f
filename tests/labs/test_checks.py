"""Each check type reports the measured value beside its threshold and its source, and fails honestly."""

from __future__ import annotations

import dataclasses
import math

import pytest

from labs.checks import CHECK_TYPES, REPORTED_BY_PROGRAM, Outcome, Reported, run_checks
from labs.render import render_check
from sandbox.judging import RunResult

MEASURED = {"exit_codes", "timed_out", "oom_killed", "duration", "memory", "cpu", "cancelled", "service_counts"}
MIB = 2**20


def samples(levels_mib, every=0.5, cpu_per_s=1.0):
    """Memory samples every ``every`` s at the given levels, and a CPU clock that runs ``cpu_per_s`` as fast."""
    memory = [(i * every, level * MIB) for i, level in enumerate(levels_mib)]
    return {"memory": memory, "cpu": [(t, 100 + t * cpu_per_s) for t, _ in memory]}


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


def test_memory_growth_separates_a_leak_from_a_flat_line():
    flat = samples([500 + (i % 2) * 0.1 for i in range(40)])
    leak = samples([500 + i * 10 for i in range(40)])  # 10 MiB more every sample
    assert check("memory_growth", outcome(**flat), max_growth_mib=16).passed
    result = check("memory_growth", outcome(**leak), max_growth_mib=16)
    # From the level at 3 CPU s (sample 6) to the highest level held three samples in a row.
    assert not result.passed and result.measured == "300 MiB"
    few = samples([500] * 8)
    assert not check("memory_growth", outcome(**few), max_growth_mib=16).passed  # 2 samples past warm-up


def test_a_leak_slowed_down_by_sleeping_is_the_same_leak():
    """The same 8 steps of 40 MiB, once in 8 s and once with the program asleep 5 s after each: a rate
    halves and halves again, the amount kept does not."""
    brisk = samples([300] * 8 + [300 + 40 * (i // 2 + 1) for i in range(16)] + [620] * 4)
    sleepy = [300] * 8 + [level for step in range(1, 9) for level in [300 + 40 * step] * 12]
    sleepy_memory = [(i * 0.5, level * MIB) for i, level in enumerate(sleepy)]
    # Asleep, the CPU clock stands still: it runs only in the first half second of each step.
    sleepy_cpu = [(t, 100 + min(t, 4) + 0.5 * sum(1 for k in range(8) if 4 + k * 6 <= t)) for t, _ in sleepy_memory]
    for memory in (brisk, {"memory": sleepy_memory, "cpu": sleepy_cpu}):
        result = check("memory_growth", outcome(**memory), max_growth_mib=32, warmup_cpu_s=3)
        assert not result.passed and result.measured == "320 MiB", result


def test_warm_up_is_counted_in_cpu_seconds_so_a_loaded_machine_does_not_stretch_it():
    """Start-up (importing, building data) takes 3 CPU s. On a busy worker the program gets a third of a CPU,
    so by the wall clock the climb lasts 9 s: a wall-clock warm-up of 3 s would take the climb for a leak."""
    climb = [min(300, 10 + i * 300 / 18) for i in range(18)]  # 9 s to reach the steady level
    loaded = samples(climb + [300] * 30, cpu_per_s=1 / 3)
    result = check("memory_growth", outcome(**loaded), max_growth_mib=16, warmup_cpu_s=3)
    assert result.passed and "after 3 CPU s" in result.detail, result
    wall = dict(loaded, cpu=[])  # the same run without CPU samples falls back to the wall clock, and says so
    result = check("memory_growth", outcome(**wall), max_growth_mib=16, warmup_cpu_s=3)
    assert not result.passed and "the run had no CPU samples" in result.detail


def test_burning_cpu_ends_warm_up_sooner_never_later():
    """A program that spins before it leaks reaches the warm-up's CPU seconds early: the leak is all measured."""
    leak = samples([300] * 4 + [300 + 20 * i for i in range(1, 30)], cpu_per_s=4)  # four busy threads
    result = check("memory_growth", outcome(**leak), max_growth_mib=32, warmup_cpu_s=3)
    assert not result.passed and float(result.measured.split()[0]) >= 520


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
    honest = outcome(**samples([100 + 30 * i for i in range(30)]), metrics={"r2": 0.1})
    forged = dataclasses.replace(honest, reported=Reported(losses=[0.1] * 10_000, counters={"optimizer_steps": 1e9}))
    options = {
        "finished_in_time": {}, "ranks_exit_zero": {}, "metric": {"metric": "r2", "op": ">=", "value": 0.9},
        "memory_growth": {"max_growth_mib": 16}, "speedup": {"min_ratio": 2}, "loss_finite": {"min_reports": 400},
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
    # records only the ranks' workers read: a job that read everything in its own process counts 0
    parent = outcome(service_counts={"record_store": {"reads": 8192, "records": 8192, "records_in_children": 0}})
    in_workers = check("store_reads", parent, count="records_in_children", op=">=", value=8192)
    assert not in_workers.passed and in_workers.threshold == "store records_in_children >= 8192"


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
    # 11 MiB a sample for 18 s, then everything released in the last samples: the last level is back at the start.
    freed = samples([500 + i * 11 for i in range(36)] + [500] * 5)
    result = check("memory_growth", outcome(**freed), max_growth_mib=32, warmup_cpu_s=0)
    assert not result.passed and "to a peak of" in result.detail
    assert float(result.measured.split()[0]) > 300


def test_a_moment_of_allocator_slack_is_not_growth_but_a_held_level_is():
    """glibc may keep a freed buffer for a sample or two before it gives it back: that comes and goes. A level
    held for three samples in a row is memory the program keeps, and counts."""
    flat = [240.0] * 30
    blip = samples(flat[:12] + [300, 300] + flat[14:])
    assert check("memory_growth", outcome(**blip), max_growth_mib=12).passed
    held = samples(flat[:12] + [300, 300, 300] + flat[15:])
    result = check("memory_growth", outcome(**held), max_growth_mib=12)
    assert not result.passed and result.measured == "60 MiB"


def test_memory_reserved_up_front_and_given_back_as_a_leak_grows_is_held_above_the_reference():
    """The leak is hidden behind buffers allocated before warm-up, one freed per epoch: the memory is flat,
    so growth alone passes it. The reference fix on the same seed held 30 MiB; this holds over 500."""
    ballooned = samples([500.0 + (i % 4) for i in range(30)])
    assert check("memory_growth", outcome(**ballooned), max_growth_mib=12).passed  # blind without a reference
    with_reference = outcome(**ballooned, reference_memory={"c": 30.0})
    result = check("memory_growth", with_reference, max_growth_mib=12, max_over_reference_mib=24)
    assert not result.passed and result.measured == "held 501 MiB, 471 MiB above the reference fix"
    assert result.margin < -8  # (501 − 54) / 54 below the ceiling


def test_a_fix_near_the_reference_level_passes_and_the_allowance_is_the_lab_s():
    fix = samples([40.0 + (i % 3) for i in range(30)])
    near = check("memory_growth", outcome(**fix, reference_memory={"c": 30.0}), max_growth_mib=12)
    assert near.passed and near.measured == "0 MiB" and "held ≤ 62 MiB" in near.threshold  # default allowance 32
    tight = check(
        "memory_growth", outcome(**fix, reference_memory={"c": 30.0}), max_growth_mib=12, max_over_reference_mib=8
    )
    assert not tight.passed and "above the reference fix" in tight.measured
    other_check = check("memory_growth", outcome(**fix, reference_memory={"other": 1.0}), max_growth_mib=12)
    assert other_check.passed and "no reference level" in other_check.threshold


def test_check_texts_are_stored_in_english_and_shown_in_the_readers_language():
    import json

    from django.utils import translation

    from labs.checks import localized

    results = [
        check("finished_in_time", outcome(duration=12.5), max_seconds=20),
        check("finished_in_time", outcome(timed_out=True)),
        check("ranks_exit_zero", outcome(oom_killed=True, exit_codes={"0": 137, "1": 0})),
        check(
            "memory_growth",
            outcome(**samples([100 + i for i in range(20)]), reference_memory={"c": 110.0}),
            max_growth_mib=0.5,
            max_over_reference_mib=16,
        ),  # fmt: skip
        check("speedup", outcome(duration=5.0, baseline={"duration": 20.0}), min_ratio=2),
        check("metric", outcome(), metric="heldout_r2", op=">=", value=0.8),
    ]
    stored = json.loads(json.dumps([r.as_dict() for r in results]))  # as a LabRun keeps them
    assert stored[0]["measured"] == "12.5 s" and stored[0]["threshold"] == "≤ 20 s"
    assert stored[3]["threshold"] == "≤ 0.5 MiB after 3 CPU s, held ≤ 126 MiB (the reference fix's 110 + 16)"
    with translation.override("en"):
        assert [localized(c)["threshold"] for c in stored] == [c["threshold"] for c in stored]
    with translation.override("zh-hans"):
        shown = [localized(c) for c in stored]
    assert shown[0]["measured"] == "12.5 秒" and shown[0]["threshold"] == "≤ 20 秒"
    assert shown[1]["measured"] == "到截止时间被终止"
    assert shown[2]["measured"].endswith("（内存不足）") and shown[2]["threshold"] == "每个 rank 都以 0 退出"
    assert shown[3]["threshold"] == "预热 3 CPU 秒后增长 ≤ 0.5 MiB，持续水平 ≤ 126 MiB（参考修复的 110 + 16）"
    assert "峰值" in shown[3]["detail"]
    assert "3 CPU 秒之后" in shown[3]["detail"]
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


def test_memory_margin_reads_the_growth_against_the_limit():
    flat = samples([500] * 40)
    leak = samples([500 + i * 5 for i in range(40)])  # 150 MiB from the level at warm-up to the held peak
    assert check("memory_growth", outcome(**flat), max_growth_mib=15).margin == pytest.approx(1.0)
    assert check("memory_growth", outcome(**leak), max_growth_mib=15).margin == pytest.approx(-9.0, rel=0.01)


def test_the_reference_level_is_read_after_the_check_s_own_warm_up():
    """Building the data peaks before warm-up ends; the reference's level is what it holds after, as the
    check judges a fix: a level taken earlier would set the ceiling at the start-up peak."""
    from labs.reference import reference_level

    start_up = samples([900.0] * 12 + [600.0] * 30)  # one CPU second per second: the peak ends at 6 s
    check_ = render_check(
        {"name": "c", "type": "memory_growth", "options": {"max_growth_mib": 16, "warmup_cpu_s": 10}}, {}
    )
    assert reference_level(outcome(**start_up).result, check_) == 600.0
    early = render_check({"name": "c", "type": "memory_growth", "options": {"max_growth_mib": 16}}, {})
    assert reference_level(outcome(**start_up).result, early) == 900.0  # the default warm-up, 3 CPU s

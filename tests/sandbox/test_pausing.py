"""Pausing a practice run at a step: the ranks stop at a safe point, the tools work on the held program,
resume and step let it go on, and the time spent paused does not count against the deadline."""

from __future__ import annotations

import textwrap
import time
from contextlib import contextmanager

import pytest

from sandbox import pausing, runner, services
from sandbox.models import Run, RunDiagnostic
from tests.sandbox.helpers import containers_of, in_background, log_of, wait_for

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), "process"]

# Ten short steps; the loss turns NaN at step 6. One rank or two (each reports its own steps).
PROGRAM = textwrap.dedent(
    """
    import time
    from faultline_harness import report

    def train_step(step):
        time.sleep(0.05)
        return float("nan") if step >= 6 else 1.0 / (step + 1)

    for step in range(10):
        report.step(step, loss=train_step(step))
    print("finished all steps", flush=True)
    """
)


@contextmanager
def executing(run: Run):
    """The run executing on a thread, as a worker would; cancelled if the test leaves it running."""
    thread = in_background(run)
    try:
        yield thread
        thread.join(timeout=60)
    finally:
        if thread.is_alive():
            services.cancel_run(Run.objects.get(pk=run.pk))
            thread.join(timeout=30)
    run.refresh_from_db()


def pauses(run: Run) -> list[tuple[str, int | None, int, str]]:
    return [
        (e.kind, e.rank, e.data["step"], e.data.get("reason") or e.data.get("how"))
        for e in run.events.filter(kind__in=["paused", "resumed"]).order_by("seq")
    ]


def paused_count(run: Run) -> int:
    return run.events.filter(kind="paused").count()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", BACKENDS)
def test_pause_at_a_step_take_a_stack_dump_step_and_resume_past_the_deadline(settings, backend):
    settings.SANDBOX_BACKEND = backend
    run = services.create_run(owner=None, files={"main.py": PROGRAM}, timeout_seconds=8, pause={"at_step": 3})
    with executing(run):
        wait_for(lambda: paused_count(run) == 1, 90, "the pause at step 3")
        diagnostic = services.request_diagnostic(Run.objects.get(pk=run.pk), "stacks", None)
        wait_for(lambda: RunDiagnostic.objects.get(pk=diagnostic.pk).status == "done", 30, "the stack dump")
        output = RunDiagnostic.objects.get(pk=diagnostic.pk).output
        # Held inside report.step, called from the program's own line: the frame a candidate clicks.
        assert 'main.py", line 10' in output, output
        services.release_run(Run.objects.get(pk=run.pk), one_step=True)
        wait_for(lambda: paused_count(run) == 2, 30, "the pause one step later")
        # Held well past the 8 s deadline: paused time is given back to a practice run.
        time.sleep(9)
        assert Run.objects.get(pk=run.pk).status == "running"
        services.release_run(Run.objects.get(pk=run.pk), one_step=False)
    assert run.status == "passed" and not run.timed_out, (run.error_message, log_of(run))
    assert "finished all steps" in log_of(run)
    assert pauses(run) == [
        ("paused", 0, 3, "at step 3"),
        ("resumed", 0, 3, "step"),
        ("paused", 0, 4, "stepped"),
        ("resumed", 0, 4, "resume"),
    ]
    assert "paused at step 3 (at step 3)" in log_of(run)
    if backend == "docker":
        assert containers_of(run) == []


@pytest.mark.django_db(transaction=True)
def test_every_rank_stops_at_the_first_non_finite_loss_and_pause_now_stops_a_running_program(settings):
    settings.SANDBOX_BACKEND = "process"
    # torch imported: the rank runtime's non-finite capture hooks into torch.nn; 100 steps of 50 ms.
    program = "import torch\n" + PROGRAM.replace("range(10)", "range(100)")
    run = services.create_run(
        owner=None, files={"main.py": program}, ranks=2, timeout_seconds=60, pause={"on_nonfinite": True}
    )
    with executing(run):
        wait_for(lambda: paused_count(run) == 2, 90, "both ranks at their first NaN")
        held = {e.rank: (e.data["step"], e.data["reason"]) for e in run.events.filter(kind="paused")}
        # Two ranks: the first NaN (step 6 on the rank that got there first) is announced for step 7, so that
        # ranks in lockstep stop together. These two share no collective: one ahead stops at its next step.
        assert set(held) == {0, 1} and (7, "first non-finite loss") in held.values(), held
        assert all(step >= 7 and reason == "first non-finite loss" for step, reason in held.values()), held
        # What was captured at the NaN (before the pause) can be read while the run is held.
        wait_for(lambda: run.diagnostics.filter(kind="nonfinite").exists(), 10, "the non-finite capture")
        services.release_run(Run.objects.get(pk=run.pk), one_step=False)
        wait_for(lambda: paused_count(run) == 2 and run.events.filter(kind="resumed").count() == 2, 30, "resumed")
        services.pause_run(Run.objects.get(pk=run.pk))
        wait_for(lambda: paused_count(run) == 4, 30, "the pause asked for while it ran")
        asked = run.events.filter(kind="paused").order_by("seq")[2:]
        assert {e.rank for e in asked} == {0, 1} and 6 < max(e.data["step"] for e in asked) < 99
        services.release_run(Run.objects.get(pk=run.pk), one_step=False)
    assert run.status == "passed", (run.error_message, log_of(run))
    assert run.events.filter(kind="resumed").count() == 4


# Two ranks in lockstep: one all-reduce per step, with a 10 s collective timeout. Only rank 1's loss turns
# NaN (at step 5); rank 0 never sees it.
LOCKSTEP = textwrap.dedent(
    """
    import os
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from faultline_harness import report

    dist.init_process_group(os.environ["FAULTLINE_DIST_BACKEND"], timeout=timedelta(seconds=10))
    rank = dist.get_rank()
    for step in range(12):
        total = torch.ones(1)
        dist.all_reduce(total)
        loss = float("nan") if rank == 1 and step == 5 else 1.0 / (step + 1)
        report.step(step, loss=loss)
    dist.destroy_process_group()
    print("rank", rank, "done", flush=True)
    """
)


@pytest.mark.django_db(transaction=True)
def test_ranks_in_lockstep_stop_at_the_same_step_and_outlast_the_collective_timeout_while_held(settings):
    settings.SANDBOX_BACKEND = "process"
    run = services.create_run(
        owner=None, files={"main.py": LOCKSTEP}, ranks=2, timeout_seconds=60, pause={"on_nonfinite": True}
    )
    with executing(run):
        wait_for(lambda: paused_count(run) == 2, 90, "both ranks held")
        held = {(e.rank, e.data["step"]) for e in run.events.filter(kind="paused")}
        # Rank 1 met the NaN at step 5 and announced step 6: rank 0 may already have been past step 5's
        # check, and could not be past step 6's (its all-reduce needs rank 1).
        assert held == {(0, 6), (1, 6)}
        time.sleep(13)  # longer than the collective timeout: no rank is inside a collective
        services.release_run(Run.objects.get(pk=run.pk), one_step=False)
    assert run.status == "passed", (run.error_message, log_of(run))
    assert "rank 0 done" in log_of(run) and "rank 1 done" in log_of(run)


@pytest.mark.django_db
def test_graded_runs_cannot_be_paused_and_bad_conditions_say_what_is_wrong():
    with pytest.raises(services.RunRejected, match="only practice runs pause"):
        services.create_run(owner=None, files={"main.py": "pass"}, purpose="grade", pause={"at_step": 1})
    graded = services.create_run(owner=None, files={"main.py": "pass"}, purpose="grade", enqueue=False)
    with pytest.raises(services.RunRejected, match="only practice runs pause"):
        services.pause_run(graded)
    for bad, message in [
        ({"at_step": -1}, "pause.at_step: a whole number"),
        ({"at_step": "ten"}, "pause.at_step"),
        ({"memory_mib": 0}, "pause.memory_mib: a whole number of MiB between 1"),
        ({"on_nonfinite": "yes"}, "pause.on_nonfinite: true or false"),
        ({"when": 3}, "unknown field"),
        ([3], "pause: an object"),
    ]:
        with pytest.raises(services.RunRejected, match=message) as caught:
            services.create_run(owner=None, files={"main.py": "pass"}, pause=bad, enqueue=False)
        assert caught.value.field == "pause"
    finished = services.create_run(owner=None, files={"main.py": "pass"}, enqueue=False)
    Run.objects.filter(pk=finished.pk).update(status="passed")
    with pytest.raises(services.RunRejected, match="not running any more"):
        services.release_run(finished, one_step=False)


def test_pause_clock_counts_while_any_rank_is_paused_and_stops_at_the_budget():
    now = [100.0]
    clock = pausing.PauseClock(clock=lambda: now[0])
    clock.observe({"kind": "paused", "rank": 0})
    now[0] += 2
    clock.observe({"kind": "paused", "rank": 1})
    now[0] += 3
    clock.observe({"kind": "resumed", "rank": 0})
    assert clock.seconds() == 5  # rank 1 is still held
    now[0] += 1
    clock.observe({"kind": "resumed", "rank": 1})
    now[0] += 50
    assert clock.seconds() == 6
    clock.observe({"kind": "resumed", "rank": 7})  # never paused: changes nothing
    clock.observe({"kind": "paused", "rank": 0})  # a program that pauses and never says it resumed
    now[0] += 10_000
    assert clock.seconds() == pausing.PAUSE_BUDGET_S


def test_a_run_killed_at_its_deadline_while_paused_gets_no_more_than_the_budget():
    watcher = runner._Watcher(0, box=None, deadline_monotonic=0.0, pause_clock=pausing.PauseClock())
    watcher.pause_clock.observe({"kind": "paused", "rank": 0})
    watcher.pause_clock._since -= 10 * pausing.PAUSE_BUDGET_S
    watcher._extend_for_pauses()
    assert watcher.extended == pausing.PAUSE_BUDGET_S


@pytest.mark.django_db(transaction=True)
def test_a_program_that_claims_to_be_paused_gets_no_time_on_a_run_that_is_not_practice(settings):
    settings.SANDBOX_BACKEND = "process"
    forged = textwrap.dedent(
        """
        import json, os, time
        from faultline_harness import report
        # Writes the settings a paused rank would read and says it is paused, then works on past its limit.
        open(os.path.join(os.environ["FAULTLINE_RUN_DIR"], "control.json"), "w").write(json.dumps({"now": 1}))
        report.emit({"kind": "paused", "step": 0, "reason": "asked"})
        time.sleep(30)
        """
    )
    run = services.create_run(owner=None, files={"main.py": forged}, timeout_seconds=5, purpose="audit")
    started = time.monotonic()
    runner.execute_run(run.pk)
    run.refresh_from_db()
    assert run.timed_out and time.monotonic() - started < 5 + 15
    assert run.events.filter(kind="paused").exists()  # shown as the program's own claim, nothing more

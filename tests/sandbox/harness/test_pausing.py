"""The rank side of pausing, with a fake clock: what stops a rank, what lets it go, and what a follower
does when the release came before it got to the pause."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox.harness.faultline_harness import pausing


class Harness:
    """One rank's Pauser on a run folder; time passes only when the rank sleeps, and ``during_hold`` is
    called on every sleep (to play the worker writing new settings)."""

    def __init__(
        self, run_dir: Path, rank: str = "0", env: dict | None = None, memory: int = 0, world_size: int = 1
    ) -> None:
        self.now = 0.0
        self.events: list[dict] = []
        self.during_hold = lambda: None
        self.memory = memory
        self.pauser = pausing.Pauser(
            run_dir=run_dir, rank=rank, emit=self.events.append, env_text=json.dumps(env) if env else "",
            sleep=self._sleep, clock=lambda: self.now, memory_bytes=lambda: self.memory, world_size=world_size,
        )  # fmt: skip

    def _sleep(self, seconds: float) -> None:
        self.now += seconds
        self.during_hold()

    def held(self) -> list[tuple[str, int, str]]:
        return [(e["kind"], e["step"], e.get("reason") or e.get("how")) for e in self.events]


def write(run_dir: Path, **settings) -> None:
    pausing.write_control(run_dir, settings)


def test_nothing_asked_costs_one_stat_and_never_holds(tmp_path):
    rank = Harness(tmp_path)
    for step in range(100):
        rank.pauser.at_step(step, 1.0)
    assert rank.events == [] and rank.now == 0


def test_an_untouched_pause_lets_go_after_the_idle_time_and_fires_only_once(tmp_path):
    rank = Harness(tmp_path, env={"at_step": 2, "idle_seconds": 5})
    for step in range(6):
        rank.pauser.at_step(step, 1.0)
    assert rank.held() == [("paused", 2, "at step 2"), ("resumed", 2, "idle time-out")]
    assert 5 <= rank.now < 5.5


def test_a_tool_used_during_the_pause_keeps_it_from_being_idle(tmp_path):
    write(tmp_path, at_step=0, idle_seconds=5)
    rank = Harness(tmp_path)
    sleeps = iter(range(1, 100_000))

    def worker():
        # Every 3 s for 12 s someone takes a stack dump (the worker bumps "touch"); then nobody does.
        n = next(sleeps)
        if n <= 120 and n % 30 == 0:
            write(tmp_path, at_step=0, idle_seconds=5, touch=n)

    rank.during_hold = worker
    rank.pauser.at_step(0, 1.0)
    assert rank.held()[-1] == ("resumed", 0, "idle time-out") and rank.now > 12 + 4


def test_step_stops_again_at_the_next_step_and_resume_runs_on(tmp_path):
    write(tmp_path, at_step=1)
    rank = Harness(tmp_path)
    releases = iter([{"release": 1, "step": True}, {"release": 2, "step": False}])

    def worker():
        if rank.now >= 1:  # one second after each pause, the candidate presses a button
            rank.now = 0
            write(tmp_path, at_step=1, **next(releases))

    rank.during_hold = worker
    for step in range(5):
        rank.pauser.at_step(step, 1.0)
    assert rank.held() == [
        ("paused", 1, "at step 1"), ("resumed", 1, "step"), ("paused", 2, "stepped"), ("resumed", 2, "resume"),
    ]  # fmt: skip


def test_a_follower_stops_at_the_pause_another_rank_began_and_passes_a_release_it_missed(tmp_path):
    write(tmp_path, now=1)
    leader, follower = Harness(tmp_path, rank="0"), Harness(tmp_path, rank="1")
    leader.during_hold = lambda: write(tmp_path, now=1, release=1)  # resumed while rank 1 was still busy
    leader.pauser.at_step(7, 1.0)
    assert leader.held() == [("paused", 7, "asked"), ("resumed", 7, "resume")]
    # Rank 1 reaches its next step only now: it joins the pause that was already let go, and goes on.
    follower.pauser.at_step(8, 1.0)
    assert follower.held() == [("paused", 8, "asked"), ("resumed", 8, "resume")]
    assert follower.now <= pausing.POLL_S * 2
    follower.pauser.at_step(9, 1.0)
    assert len(follower.events) == 2


def test_ranks_in_lockstep_stop_together_one_step_after_a_nan_only_one_of_them_saw(tmp_path):
    write(tmp_path, on_nonfinite=True)
    rank0, rank1 = Harness(tmp_path, rank="0", world_size=2), Harness(tmp_path, rank="1", world_size=2)
    rank1.pauser.at_step(5, 0.5)  # rank 1 already checked step 5 and went on (into step 6's collective)
    rank0.pauser.at_step(5, "nan")  # report.step sends NaN as the string "nan"; only rank 0's loss is NaN
    # Had rank 0 stopped at step 5, rank 1 would wait in step 6's collective until its timeout. Both stop
    # at step 6 instead, which rank 1 cannot pass without rank 0.
    assert rank0.events == []
    for rank in (rank0, rank1):
        rank.during_hold = lambda: write(tmp_path, on_nonfinite=True, release=1)
        rank.pauser.at_step(6, "nan" if rank is rank0 else 0.5)
        assert rank.held() == [("paused", 6, "first non-finite loss"), ("resumed", 6, "resume")]
    # A condition every rank meets at the same step stops them at that step.
    write(tmp_path, at_step=9, release=1)
    for rank in (rank0, rank1):
        rank.during_hold = lambda: write(tmp_path, at_step=9, release=2)
        rank.pauser.at_step(9, 0.5)
        assert rank.held()[-2] == ("paused", 9, "at step 9")


def test_memory_over_the_limit_stops_the_rank_once(tmp_path):
    rank = Harness(tmp_path, env={"memory_mib": 100, "idle_seconds": 1}, memory=50 * pausing.MIB)
    rank.pauser.at_step(0, 1.0)
    rank.memory = 101 * pausing.MIB
    rank.pauser.at_step(1, 1.0)
    rank.pauser.at_step(2, 1.0)
    assert [e for e in rank.held() if e[0] == "paused"] == [("paused", 1, "memory over 100 MiB")]


def test_settings_of_the_wrong_shape_are_ignored_not_fatal(tmp_path):
    (tmp_path / "control.json").write_text('{"at_step": "three", "on_nonfinite": 1, "memory_mib": -4}')
    rank = Harness(tmp_path)
    rank.pauser.at_step(5, float("nan"))
    (tmp_path / "control.json").write_text("[not json")
    rank.pauser.at_step(6, float("nan"))
    assert rank.events == []


def test_a_rank_that_followed_a_pause_does_not_stop_again_for_the_same_condition(tmp_path):
    write(tmp_path, on_nonfinite=True)
    leader, behind = Harness(tmp_path, rank="0"), Harness(tmp_path, rank="1")
    leader.during_hold = lambda: write(tmp_path, on_nonfinite=True, release=1)
    leader.pauser.at_step(6, "nan")
    behind.pauser.at_step(4, 0.5)  # no collective between them: two steps behind, it goes on to step 6
    assert behind.events == []
    behind.pauser.at_step(6, "nan")  # stops where the run stopped, let go at once (released already)
    behind.pauser.at_step(7, "nan")  # its own first NaN was the same condition: the run already stopped
    assert behind.held() == [("paused", 6, "first non-finite loss"), ("resumed", 6, "resume")]

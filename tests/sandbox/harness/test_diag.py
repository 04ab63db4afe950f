"""Stack and memory dumps requested from a live, hanging two-rank program."""

from __future__ import annotations

import json
import re

import pytest

from .conftest import LauncherRun, run_diag, start_launcher

HANGING_PROGRAM = """
    import os, threading, time

    class LeakyThing:
        def __init__(self, i):
            self.payload = [i]

    KEEP = [LeakyThing(i) for i in range(30_000)]

    def rank0_stuck_on_a_lock():
        lock = threading.Lock()
        lock.acquire()
        print("ready", flush=True)
        lock.acquire()  # nobody will ever release it

    def rank1_sleeping_in_barrier():
        print("ready", flush=True)
        time.sleep(300)

    if os.environ["RANK"] == "0":
        rank0_stuck_on_a_lock()
    else:
        rank1_sleeping_in_barrier()
"""


@pytest.fixture(scope="module")
def hanging(tmp_path_factory: pytest.TempPathFactory) -> LauncherRun:
    run = start_launcher(tmp_path_factory.mktemp("hang"), HANGING_PROGRAM, ranks=2)
    run.wait_for_line(lambda line: line == "[r0] ready")
    run.wait_for_line(lambda line: line == "[r1] ready")
    yield run
    run.stop()


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^=== rank (\d+) \(pid \d+\) ===$", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_stack_dump_shows_where_each_rank_hangs(hanging: LauncherRun) -> None:
    done = run_diag(hanging.run_dir, "stacks")
    assert done.returncode == 0, done.stdout + done.stderr
    pids = hanging.pids()["ranks"]
    for rank in ("0", "1"):
        assert f"=== rank {rank} (pid {pids[rank]}) ===" in done.stdout
    sections = _sections(done.stdout)
    assert "in rank0_stuck_on_a_lock" in sections["0"]
    assert "in rank1_sleeping_in_barrier" in sections["1"]
    assert "main.py" in sections["0"]
    # Asking twice works too: the file is rewritten from the start, not appended after a hole.
    again = run_diag(hanging.run_dir, "stacks")
    assert again.returncode == 0 and "\x00" not in (hanging.run_dir / "diag" / "stacks-rank0.txt").read_text()
    assert "in rank0_stuck_on_a_lock" in _sections(again.stdout)["0"]


def test_memory_dump_lists_top_object_types(hanging: LauncherRun) -> None:
    done = run_diag(hanging.run_dir, "memory", timeout=10)
    assert done.returncode == 0, done.stdout + done.stderr
    sections = _sections(done.stdout)
    for rank in ("0", "1"):
        text = sections[rank]
        assert "VmRSS:" in text
        assert "top 15 object types by count" in text
        assert re.search(r"^\s+30000  __main__\.LeakyThing$", text, flags=re.MULTILINE), text
        assert "not tracing" in text


def test_launcher_keeps_running_after_diagnostics(hanging: LauncherRun) -> None:
    run_diag(hanging.run_dir, "stacks")
    assert hanging.proc.poll() is None
    assert all(e["kind"] != "rank_exit" for e in hanging.events())


def test_diag_without_a_running_program(tmp_path) -> None:
    done = run_diag(tmp_path, "stacks")
    assert done.returncode == 3
    assert done.stdout.count("\n") == 1 and "no program is running" in done.stdout

    (tmp_path / "pids.json").write_text(json.dumps({"launcher": 1, "ranks": {"0": 2**22 + 7}}))
    done = run_diag(tmp_path, "memory")
    assert done.returncode == 3 and "none of the rank processes are alive" in done.stdout


def test_diag_after_the_run_finished(launch) -> None:
    run = launch("print('bye')\n")
    assert run.wait(30) == 0
    done = run_diag(run.run_dir, "stacks")
    assert done.returncode == 3 and "finished" in done.stdout

"""The launcher's zygote mode without Docker: torch preloaded, the job read from a control folder, ranks
forked. Output must follow the same protocol as a normal launch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import LauncherRun, harness_env, parse, process_gone, wait_until

READY = "@@fl-zygote-ready"


def start_zygote(
    root: Path, files: dict[str, str], env: dict[str, str] | None = None, preload: str | None = None
) -> LauncherRun:
    program_dir, control = root / "program", root / "control"
    program_dir.mkdir(parents=True)
    control.mkdir()
    for name, text in files.items():
        (program_dir / name).write_text(textwrap.dedent(text))
    command = [
        sys.executable, "-m", "faultline_harness.launch", "--zygote", str(control), "--program-dir", str(program_dir),
        "--output-dir", str(root / "out"), "--work-dir", str(root / "cwd"), "--run-dir", str(root / "run"),
        "--heartbeat-interval", "0.5", *(("--preload", preload) if preload is not None else ()),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=root, env=harness_env(**(env or {})), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        text=True, encoding="utf-8", errors="replace",
    )  # fmt: skip
    return LauncherRun(proc=proc, root=root)


def send_job(run: LauncherRun, **job) -> None:
    control = run.root / "control"
    tmp = control / ".job.tmp"
    tmp.write_text(json.dumps(job))
    os.rename(tmp, control / "job.json")


@pytest.fixture
def zygote(tmp_path: Path):
    runs: list[LauncherRun] = []

    def _start(files: dict[str, str], **kwargs) -> LauncherRun:
        run = start_zygote(tmp_path / f"z{len(runs)}", files, **kwargs)
        runs.append(run)
        run.wait_for_line(lambda line: line == READY, timeout=120)
        return run

    yield _start
    for run in runs:
        run.stop()


TRAIN = """
    import os, sys, tracemalloc
    import numpy as np
    import torch
    import torch.distributed as dist
    from faultline_harness import report

    dist.init_process_group(os.environ["FAULTLINE_DIST_BACKEND"])
    rank = dist.get_rank()
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    print(f"allreduce={total.item():g} world={dist.get_world_size()} argv0={sys.argv[0]} name={__name__}")
    print(f"path0={sys.path[0]} cwd={os.getcwd()} draw={np.random.randint(1 << 30)}")
    print(f"anomaly={torch.is_anomaly_enabled()} debug={dist.get_debug_level()} trace={tracemalloc.is_tracing()}")
    print(f"threads={torch.get_num_threads()} omp={os.environ.get('OMP_NUM_THREADS')}")
    print(f"rank {rank} on stderr", file=sys.stderr)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(4):
        opt.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()
        report.step(step, loss=1.0)
    left_open = open(f"left-open-{rank}.txt", "w")
    left_open.write("flushed at exit")
    dist.destroy_process_group()
"""


def test_nothing_but_the_ready_line_comes_before_the_job(zygote) -> None:
    run = zygote({"main.py": "print('hi')"})
    time.sleep(0.5)
    assert run.snapshot() == [READY]
    assert run.proc.poll() is None
    send_job(run, entry="main.py", ranks=1)
    assert run.wait(60) == 0
    lines = run.snapshot()
    assert lines[0] == READY and parse(lines[1])["kind"] == "start"
    assert "[r0] hi" in lines and parse(lines[-1])["kind"] == "end"


def test_two_forked_ranks_train_like_launched_ones(zygote) -> None:
    run = zygote({"main.py": TRAIN})
    send_job(run, entry="main.py", ranks=2, env={"FAULTLINE_DETECT_ANOMALY": "1", "TORCH_DISTRIBUTED_DEBUG": "INFO"})
    assert run.wait(120) == 0, "\n".join(run.lines[-30:])
    program = run.root / "program" / "main.py"
    draws = set()
    for rank in (0, 1):
        output = run.output(rank)
        assert f"allreduce=3 world=2 argv0={program} name=__main__" in output
        assert f"rank {rank} on stderr" in output
        assert "anomaly=True debug=DebugLevel.INFO trace=False" in output
        assert f"path0={program.parent} cwd={run.root / 'cwd'}" in " ".join(output)
        assert f"omp={max(1, len(os.sched_getaffinity(0)) // 2)}" in " ".join(output)
        draws.update(line.split("draw=")[1] for line in output if "draw=" in line)
        assert (run.root / "cwd" / f"left-open-{rank}.txt").read_text() == "flushed at exit"
    assert len(draws) == 2, "numpy must be reseeded in every rank"
    counters = {e["rank"]: e["value"] for e in run.events("counter")}
    assert counters == {0: 4, 1: 4}
    assert len(run.events("metric")) == 8
    end = run.events("end")[-1]
    assert end["exit_codes"] == {"0": 0, "1": 0}
    pids = run.pids()
    assert pids["ended"] is True and set(pids["ranks"]) == {"0", "1"}


@pytest.mark.parametrize(
    ("code", "expected", "text"),
    [
        ("import sys; sys.exit(3)", 3, None),
        ("raise ValueError('boom')", 1, "ValueError: boom"),
        ("raise SystemExit('a message')", 1, "a message"),
        ("raise KeyboardInterrupt", 128 + signal.SIGINT, "KeyboardInterrupt"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + signal.SIGKILL, None),
    ],
)
def test_exit_status_is_the_interpreters(zygote, code: str, expected: int, text: str | None) -> None:
    run = zygote({"main.py": code}, preload="")
    send_job(run, entry="main.py", ranks=1)
    assert run.wait(60) == expected
    assert run.events("rank_exit")[0]["exit_code"] == expected
    if text:
        assert any(text in line for line in run.output(0)), run.output(0)


def test_sigterm_reaches_forked_ranks_and_ends_the_launch(zygote) -> None:
    run = zygote({"main.py": "import time\nprint('up', flush=True)\ntime.sleep(600)"}, preload="")
    send_job(run, entry="main.py", ranks=2)
    run.wait_for_line(lambda line: line == "[r1] up", timeout=60)
    run.wait_for_line(lambda line: line == "[r0] up", timeout=60)
    ranks = [int(pid) for pid in run.pids()["ranks"].values()]
    run.proc.send_signal(signal.SIGTERM)
    assert run.wait(30) == 143
    assert wait_until(lambda: all(process_gone(pid) for pid in ranks), 10)


def test_a_bad_job_ends_the_zygote_with_status_2(zygote) -> None:
    run = zygote({"main.py": "print(1)"}, preload="")
    send_job(run, entry="../outside.py", ranks=1)
    assert run.wait(30) == 2
    assert run.snapshot() == [READY]


def test_stack_dump_of_a_forked_rank(zygote) -> None:
    program = """
        import time
        def wait_here():
            while True:
                time.sleep(0.1)
        print("waiting", flush=True)
        wait_here()
    """
    run = zygote({"main.py": program}, preload="")
    send_job(run, entry="main.py", ranks=1)
    run.wait_for_line(lambda line: line == "[r0] waiting", timeout=60)
    env = harness_env()
    done = subprocess.run(
        [sys.executable, "-m", "faultline_harness.diag", "stacks", "--run-dir", str(run.run_dir), "--timeout", "5"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wait_here" in done.stdout
    run.stop()


STORE_READER = """
    import os, socket, stat, struct
    path = os.environ["FAULTLINE_RECORD_STORE"]
    # No descriptor of a forked rank may be a listening socket: it could answer in the store's place.
    listening = 0
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                sock = socket.socket(fileno=os.dup(fd))
                listening += sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                sock.close()
        except OSError:
            pass
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    for index in range(3):
        conn.sendall(struct.pack("<qI", 9, index))
        got = b""
        while len(got) < 8:
            got += conn.recv(8 - len(got))
    print(f"listening={listening} read={len(got)}")
"""


def test_forked_ranks_reach_the_store_but_not_its_listening_socket(zygote) -> None:
    run = zygote({"main.py": STORE_READER}, preload="")
    services = {"record_store": {"latency_ms": 1, "concurrency": 2, "floats": 2}}
    send_job(run, entry="main.py", ranks=2, env={"FAULTLINE_SERVICES": json.dumps(services)})
    assert run.wait(60) == 0, "\n".join(run.lines[-30:])
    for rank in (0, 1):
        assert run.output(rank) == ["listening=0 read=8"]
    assert run.events("end")[-1]["services"] == {"record_store": {"reads": 6, "records": 3, "records_in_children": 0}}


def test_fork_ranks_preloads_in_the_launcher_without_waiting_for_a_job(launch) -> None:
    """``--fork-ranks`` (every cold container): the ranks are forks of a launcher that imported the preload,
    so what they find imported, and whose pages those are, is the same as in a warm container."""
    program = """
        import sys
        print(f"preloaded={'decimal' in sys.modules}")
    """
    forked = launch(program, ranks=2, args=("--fork-ranks", "--preload", "decimal"))
    assert forked.wait(120) == 0, "\n".join(forked.lines[-30:])
    for rank in (0, 1):
        assert "preloaded=True" in " ".join(forked.output(rank)), forked.output(rank)
    assert forked.events("end")[-1]["exit_codes"] == {"0": 0, "1": 0}
    fresh = launch(program, ranks=1)
    assert fresh.wait(120) == 0
    assert "preloaded=False" in " ".join(fresh.output(0))

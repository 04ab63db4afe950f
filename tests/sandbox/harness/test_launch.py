"""The launcher end to end: real rank processes, real signals, output read back from its stdout."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from .conftest import LauncherRun, parse, process_gone, start_launcher, wait_until

TORCH_PROGRAM = """
    import os, sys
    import numpy as np
    import torch
    import torch.distributed as dist
    from faultline_harness import report

    dist.init_process_group(os.environ["FAULTLINE_DIST_BACKEND"])
    rank = dist.get_rank()
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    print(f"allreduce={total.item():g} world={dist.get_world_size()}")
    print(f"rank {rank} says hello on stderr", file=sys.stderr)
    print(f"anomaly={torch.is_anomaly_enabled()}")

    STEPS = 7
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 3:
            report.step(step, loss=float("nan"), grad_norm=torch.tensor(float("inf")), lr=np.float32(-np.inf))
        else:
            report.step(step, loss=loss, grad_norm=1.5, lr=np.float64(0.01), tokens=np.int64(32))
    report.metric("accuracy", torch.tensor(0.5), step=STEPS)
    dist.destroy_process_group()
"""

STEPS = 7


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory: pytest.TempPathFactory) -> LauncherRun:
    run = start_launcher(
        tmp_path_factory.mktemp("torch"),
        TORCH_PROGRAM,
        ranks=2,
        env={"FAULTLINE_DETECT_ANOMALY": "1"},
        args=("--heartbeat-interval", "0.5"),
    )
    try:
        run.wait(120)
    finally:
        run.stop()
    return run


@pytest.mark.parametrize("rank", [0, 1])
def test_gloo_all_reduce_across_two_ranks(torch_run: LauncherRun, rank: int) -> None:
    assert torch_run.proc.returncode == 0, "\n".join(torch_run.lines[-30:])
    output = torch_run.output(rank)
    assert "allreduce=3 world=2" in output
    assert f"rank {rank} says hello on stderr" in output
    assert "anomaly=True" in output  # FAULTLINE_DETECT_ANOMALY reached sitecustomize


def test_every_line_is_prefixed_output_or_telemetry(torch_run: LauncherRun) -> None:
    for line in torch_run.lines:
        if line.startswith("@@fl "):
            event = parse(line)
            assert event is not None and isinstance(event["t"], float) and event["kind"]
        else:
            assert line.startswith(("[r0] ", "[r1] ")), line


def test_start_end_and_summary(torch_run: LauncherRun) -> None:
    start = torch_run.events("start")
    assert start[0]["ranks"] == 2 and start[0]["dist_backend"] == "gloo"
    assert parse(torch_run.lines[0]) == start[0]
    exits = {e["rank"]: e for e in torch_run.events("rank_exit")}
    assert {r: e["exit_code"] for r, e in exits.items()} == {0: 0, 1: 0}
    end = parse(torch_run.lines[-1])
    assert end is not None and end["kind"] == "end"
    assert end["exit_codes"] == {"0": 0, "1": 0}
    assert all(v > 50 * 2**20 for v in end["peak_rss_bytes"].values())  # torch alone is bigger than that
    summary = json.loads((torch_run.out_dir / "harness" / "summary.json").read_text())
    assert summary["exit_codes"] == end["exit_codes"] and set(summary["durations"]) == {"0", "1"}
    assert torch_run.pids()["ended"] is True


def test_step_metrics_arrive_with_rank_and_nan_as_string(torch_run: LauncherRun) -> None:
    for rank in (0, 1):
        steps = [e for e in torch_run.events("metric") if e["rank"] == rank and "name" not in e]
        assert [e["step"] for e in steps] == list(range(STEPS))
        bad = steps[3]
        assert bad["loss"] == "nan" and bad["grad_norm"] == "inf" and bad["lr"] == "-inf"
        good = steps[0]
        assert isinstance(good["loss"], float) and good["grad_norm"] == 1.5 and good["tokens"] == 32
        assert good["throughput"] is None
        named = [e for e in torch_run.events("metric") if e["rank"] == rank and e.get("name") == "accuracy"]
        assert named == [
            {"kind": "metric", "t": named[0]["t"], "rank": rank, "name": "accuracy", "value": 0.5, "step": 7}
        ]


def test_optimizer_step_counter_matches_calls(torch_run: LauncherRun) -> None:
    for rank in (0, 1):
        counters = [e for e in torch_run.events("counter") if e["rank"] == rank and e["name"] == "optimizer_steps"]
        assert counters, "no optimizer_steps counter"
        assert counters[-1]["value"] == STEPS
        values = [e["value"] for e in counters]
        assert values == sorted(values)


def test_heartbeat_reports_alive_ranks_and_progress(torch_run: LauncherRun) -> None:
    beats = torch_run.events("heartbeat")
    assert beats, "no heartbeat in a multi-second run"
    assert beats[0]["alive"] == [0, 1]
    assert set(beats[0]["since_progress"]) == {"0", "1"}


def test_a_process_group_left_open_is_destroyed_at_exit(launch) -> None:
    # torch aborts some exits with a live gloo group; the harness closes it the way a tidy program would.
    run = launch(
        """
        import torch, torch.distributed as dist
        closing = dist.destroy_process_group
        def traced(*args, **kwargs):
            print("destroying the process group", flush=True)
            closing(*args, **kwargs)
            print(f"initialized={dist.is_initialized()}", flush=True)
        dist.destroy_process_group = traced
        dist.init_process_group("gloo")
        total = torch.ones(1)
        dist.all_reduce(total)
        print(f"sum={total.item():g}", flush=True)
        """,
        ranks=2,
    )
    assert run.wait(120) == 0, "\n".join(run.lines[-30:])
    for rank in (0, 1):
        output = run.output(rank)
        assert "sum=2" in output
        assert "destroying the process group" in output and "initialized=False" in output, output


def test_failing_rank_sets_exit_code_and_stops_the_others(launch) -> None:
    run = launch(
        """
        import os, sys, time
        if os.environ["RANK"] == "0":
            time.sleep(0.3)
            print("rank 0 gives up", flush=True)
            sys.exit(3)
        print("rank 1 waits for a peer that will never come", flush=True)
        time.sleep(300)
        """,
        ranks=2,
    )
    started = time.monotonic()
    code = run.wait(30)
    elapsed = time.monotonic() - started
    assert code == 3
    assert elapsed < 12, f"launcher took {elapsed:.1f}s to give up on the healthy rank"
    exits = {e["rank"]: e for e in run.events("rank_exit")}
    assert exits[0]["exit_code"] == 3
    assert exits[1]["exit_code"] == 128 + signal.SIGTERM
    assert 4.0 <= exits[1]["t"] - exits[0]["t"] <= 8.0  # the 5 s grace, then SIGTERM
    assert run.events("end")[0]["exit_codes"] == {"0": 3, "1": 143}
    assert process_gone(run.pids()["ranks"]["1"])


def test_memory_telemetry_counts_the_rank_process_tree(launch) -> None:
    run = launch(
        """
        import subprocess, sys, time
        holder = subprocess.Popen([sys.executable, "-c", (
            "import sys, time\\n"
            "block = b'\\\\x01' * (96 << 20)\\n"
            "print('child ready', flush=True)\\n"
            "time.sleep(2.5)\\n"
        )])
        holder.wait()
        """,
        args=("--sample-interval", "0.2"),
    )
    run.wait_for_line(lambda line: line == "[r0] child ready")
    event = run.wait_for_event("memory", lambda e: e["processes"] >= 2 and e["rss_bytes"] >= 96 << 20)
    assert event["rank"] == 0
    assert event["pss_bytes"] is None or event["pss_bytes"] >= 90 << 20
    assert run.wait(30) == 0
    assert run.events("end")[0]["peak_rss_bytes"]["0"] >= 96 << 20


def test_sigterm_to_launcher_kills_every_process(launch) -> None:
    run = launch(
        """
        import os, signal, subprocess, sys, time
        if os.environ["RANK"] == "1":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # forces the SIGKILL follow-up
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        print(f"child={child.pid}", flush=True)
        time.sleep(300)
        """,
        ranks=2,
    )
    children = [
        int(run.wait_for_line(lambda line, r=rank: line.startswith(f"[r{r}] child=")).split("=")[1]) for rank in (0, 1)
    ]
    pids = run.pids()
    everything = [pids["launcher"], *pids["ranks"].values(), *children]
    assert not any(process_gone(pid) for pid in everything)
    os.kill(pids["launcher"], signal.SIGTERM)
    assert run.wait(20) == 143
    assert wait_until(lambda: all(process_gone(pid) for pid in everything), 5), "processes survived SIGTERM"
    end = parse(run.lines[-1])
    assert end is not None and end["kind"] == "end"
    assert end["exit_codes"] == {"0": 143, "1": 137}


def test_ranks_die_with_a_killed_launcher(launch) -> None:
    run = launch("import time\nprint('up', flush=True)\ntime.sleep(300)\n", ranks=2)
    run.wait_for_line(lambda line: line == "[r1] up")
    run.wait_for_line(lambda line: line == "[r0] up")
    ranks = list(run.pids()["ranks"].values())
    run.proc.kill()
    run.wait(10)
    assert wait_until(lambda: all(process_gone(pid) for pid in ranks), 5)


def test_long_lines_are_capped_and_rank_telemetry_cannot_impersonate_the_launcher(launch) -> None:
    run = launch(
        """
        import sys, time
        out = sys.stdout
        out.write("a" * 200_000 + "\\n")
        out.write("tail\\n")
        out.write('@@fl {"kind": "end", "exit_codes": {}}\\n')
        out.write("@@fl not json\\n")
        out.write('@@fl {"kind": "custom", "value": NaN, "rank": 7}\\n')
        out.flush()
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:  # one line that never ends
            out.write("z" * 4096)
            out.flush()
        """
    )
    assert run.wait(30) == 0
    output = run.output(0)
    suffix = "…[line truncated]"
    assert output[0] == "a" * 8192 + suffix
    assert output[1] == "tail"
    assert output[2] == '@@fl {"kind": "end", "exit_codes": {}}'
    assert output[3] == "@@fl not json"
    assert output[4] == "z" * 8192 + suffix
    assert len(output) == 5
    custom = run.events("custom")
    assert custom == [{"kind": "custom", "t": custom[0]["t"], "rank": 0, "value": "nan"}]
    assert [e["kind"] for e in run.events()].count("end") == 1


def test_environment_and_directories(launch, tmp_path) -> None:
    run = launch(
        """
        import json, os, sys
        keys = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                "FAULTLINE_RANK", "FAULTLINE_WORLD_SIZE", "FAULTLINE_OUTPUT_DIR", "FAULTLINE_DIST_BACKEND",
                "PYTHONUNBUFFERED", "PYTHONFAULTHANDLER", "FAULTLINE_TRACEMALLOC"]
        print(json.dumps({k: os.environ.get(k) for k in keys}))
        print("cwd=" + os.getcwd())
        print("path0=" + os.environ["PYTHONPATH"].split(os.pathsep)[0])
        import tracemalloc
        print(f"tracing={tracemalloc.is_tracing()}")
        """,
        ranks=2,
        env={"FAULTLINE_TRACEMALLOC": "1"},
    )
    assert run.wait(30) == 0
    port = run.events("start")[0]["master_port"]
    for rank in (0, 1):
        output = run.output(rank)
        env = json.loads(output[0])
        assert env["RANK"] == env["LOCAL_RANK"] == env["FAULTLINE_RANK"] == str(rank)
        assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == env["FAULTLINE_WORLD_SIZE"] == "2"
        assert env["MASTER_ADDR"] == "127.0.0.1" and env["MASTER_PORT"] == str(port)
        assert env["FAULTLINE_OUTPUT_DIR"] == str(run.out_dir) and env["FAULTLINE_DIST_BACKEND"] == "gloo"
        assert env["PYTHONUNBUFFERED"] == env["PYTHONFAULTHANDLER"] == "1"
        assert output[1] == "cwd=" + str(run.root / "work")
        assert output[2].endswith("faultline_harness/_site")
        assert output[3] == "tracing=True"
    assert (run.run_dir / "diag").is_dir()


def test_faulthandler_timeout_toggle_dumps_stacks_to_stderr(launch) -> None:
    run = launch(
        """
        import time
        def slow_function_being_watched():
            time.sleep(1.3)
        slow_function_being_watched()
        """,
        env={"FAULTLINE_FAULTHANDLER_TIMEOUT": "0.5"},
    )
    assert run.wait(30) == 0
    assert any("in slow_function_being_watched" in line for line in run.output(0))


def test_a_broken_toggle_warns_but_the_program_still_runs(launch) -> None:
    run = launch("print('still here')\n", env={"FAULTLINE_FAULTHANDLER_TIMEOUT": "soon"})
    assert run.wait(30) == 0
    output = run.output(0)
    assert "still here" in output
    warnings = [line for line in output if line.startswith("faultline-harness: warning:")]
    assert len(warnings) == 1 and "faulthandler timeout" in warnings[0]

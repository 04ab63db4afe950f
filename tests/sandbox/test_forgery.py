"""A hostile program against the run record, in the real Docker sandbox.

What a run is judged on (exit codes, the deadline, memory, the end of the run) must come from a place
the program cannot write. Each test here is one way a candidate's program tried to write it anyway.
The judge registered below captures the ``RunResult`` exactly as labs' grading receives it.
"""

from __future__ import annotations

import textwrap

import pytest

from sandbox import judging, runner, services
from sandbox.models import Run
from tests.sandbox.helpers import log_of

pytestmark = [pytest.mark.docker, pytest.mark.django_db]

MIB = 1024 * 1024

# Writes launcher-format lines through every descriptor of every process it can find, then either exits
# with a failure or sleeps past its deadline. Prints which ones it managed to open.
FORGER = r"""
import json, os, sys, time

FORGED = [
    {"kind": "rank_exit", "rank": 0, "exit_code": 0, "duration": 0.1, "t": 0.2},
    {"kind": "memory", "rank": 0, "rss_bytes": 1, "pss_bytes": 1, "processes": 1, "t": 0.3},
    {"kind": "container_memory", "anon_bytes": 1, "shmem_bytes": 0, "usage_bytes": 1, "t": 0.3},
    {"kind": "end", "exit_codes": {"0": 0}, "duration": 0.5, "peak_rss_bytes": {"0": 1}, "exit_code": 0,
     "t": 0.5, "output_full": False},
]
payload = "".join("@@fl " + json.dumps(e, separators=(",", ":")) + "\n" for e in FORGED).encode()
opened = []
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    if pid == os.getpid():
        continue
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError as exc:
        print(f"cannot list /proc/{pid}/fd: {type(exc).__name__}", flush=True)
        continue
    for fd in fds:
        path = f"/proc/{pid}/fd/{fd}"
        try:
            handle = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.write(handle, payload)
            opened.append(path)
        except OSError:
            pass
        finally:
            os.close(handle)
print("OPENED " + " ".join(opened), flush=True)
# The same lines on our own stdout, where the launcher must treat them as plain output.
sys.stdout.write(payload.decode())
sys.stdout.flush()
MODE
"""


def run_captured(settings, code: str, monkeypatch, **options) -> tuple[Run, judging.RunResult | None]:
    """Run ``code`` as a judged run and return the run and the RunResult its judge was handed."""
    settings.SANDBOX_BACKEND = "docker"
    seen: list[judging.RunResult] = []

    def judge(run_id: int, result: judging.RunResult) -> bool:
        seen.append(result)
        return result.exit_codes == {"0": 0} and not result.timed_out

    monkeypatch.setitem(judging._judges, "forgery-test", judge)
    run = services.create_run(
        owner=None, files={"main.py": textwrap.dedent(code)}, purpose="forgery-test", enqueue=False, **options
    )
    runner.execute_run(run.pk)
    run.refresh_from_db()
    return run, (seen[0] if seen else None)


def launcher_events(run: Run, kind: str) -> list[dict]:
    return [e.data for e in run.events.filter(kind=kind).order_by("seq")]


def test_forged_launcher_lines_through_any_descriptor_change_nothing(settings, monkeypatch):
    run, result = run_captured(settings, FORGER.replace("MODE", "sys.exit(3)"), monkeypatch, timeout_seconds=30)
    log = log_of(run)
    opened = next(line for line in log.splitlines() if "OPENED" in line)
    # PID 1 is the launcher: not one of its descriptors could be opened, whatever else could.
    assert "/proc/1/" not in opened, opened
    assert run.status == Run.Status.FAILED
    assert result is not None
    assert result.exit_codes == {"0": 3} and result.exit_code == 3
    assert run.exit_codes == {"0": 3}
    # One end, one rank_exit: the launcher's; the forged ones arrived as the rank's printed text.
    ends = launcher_events(run, "end")
    assert len(ends) == 1 and ends[0]["exit_code"] == 3
    assert [e["exit_code"] for e in launcher_events(run, "rank_exit")] == [3]
    assert all(e.get("rss_bytes") != 1 for e in launcher_events(run, "memory"))
    assert all(sample > 1 for _, sample in result.memory)
    assert '[r0] @@fl {"kind":"end"' in log


def test_forged_end_then_sleeping_past_the_deadline_times_out(settings, monkeypatch):
    run, result = run_captured(settings, FORGER.replace("MODE", "time.sleep(60)"), monkeypatch, timeout_seconds=8)
    assert run.status == Run.Status.FAILED
    assert result is not None and result.timed_out
    assert result.exit_codes.get("0") != 0
    assert launcher_events(run, "end") == []  # the launcher never ended: the worker killed it at the deadline


def test_signals_to_the_launcher_cannot_end_the_run_as_a_pass(settings, monkeypatch):
    code = """
    import os, signal, time
    for signum in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCONT, signal.SIGUSR1, signal.SIGTERM):
        try:
            os.kill(1, signum)
        except OSError as exc:
            print("refused", signum, exc, flush=True)
    time.sleep(30)
    """
    run, result = run_captured(settings, code, monkeypatch, timeout_seconds=8)
    assert run.status == Run.Status.FAILED
    assert result is not None
    # SIGTERM is how the platform stops a run, so the launcher honours it and ends the run as stopped;
    # every other signal from inside is ignored by the container's PID 1.
    assert result.exit_code == 143 or result.timed_out
    assert result.exit_codes.get("0") != 0


def test_memory_hidden_in_tmpfs_files_is_measured(settings, monkeypatch):
    code = """
    import os, time
    chunk = os.urandom(1024 * 1024)
    with open("/work/cwd/cache.bin", "wb") as fh:
        for i in range(160):
            fh.write(chunk)
            if i % 20 == 0:
                fh.flush()
                time.sleep(0.25)
    time.sleep(1.5)
    """
    run, result = run_captured(settings, code, monkeypatch, timeout_seconds=60, memory_mb=1024)
    assert result is not None and result.memory_source == "container"
    sizes = [size for _, size in result.memory]
    assert len(sizes) >= 4
    # The program's own process stays small; the 160 MiB it wrote to the tmpfs is in the container's memory.
    assert max(sizes) - min(sizes) > 120 * MIB, [s // MIB for s in sizes]


def test_the_cpu_clock_counts_work_and_stands_still_while_the_program_sleeps(settings, monkeypatch):
    """A memory check's warm-up is counted on this clock (the container's cgroup), so sleeping cannot stretch it."""
    code = """
    import time
    end = time.process_time() + 1.5
    while time.process_time() < end:
        pass
    time.sleep(3)
    """
    run, result = run_captured(settings, code, monkeypatch, timeout_seconds=30)
    assert result is not None and result.memory_source == "container"
    assert len(result.cpu) >= 6
    times = [t for t, _ in result.cpu]
    used = [seconds for _, seconds in result.cpu]
    assert used == sorted(used)
    # 1.5 s of work (plus the launcher's own bookkeeping) over at least 4.5 s by the clock.
    assert 1.3 <= used[-1] - used[0] <= 2.5, used
    assert times[-1] - times[0] >= 4.0
    asleep = [seconds for t, seconds in result.cpu if t >= times[-1] - 2.0]
    assert asleep[-1] - asleep[0] < 0.3, result.cpu


def test_a_full_output_folder_is_reported_and_the_first_files_kept(settings, monkeypatch):
    code = """
    import os
    chunk = b"x" * (1024 * 1024)
    written = 0
    try:
        for i in range(2048):  # 2 GB asked for; the folder holds far less
            with open(f"/work/out/part-{i:04d}.bin", "wb") as fh:
                fh.write(chunk)
            written += 1
    except OSError as exc:
        print("stopped:", exc.strerror, "after", written, "files", flush=True)
    """
    run, result = run_captured(settings, code, monkeypatch, timeout_seconds=60, memory_mb=1024)
    assert result is not None
    assert not result.oom_killed
    assert result.exit_codes == {"0": 0}  # the harness survived and wrote its end line
    assert result.output_full
    assert "output folder full" in run.error_message
    names = sorted(run.artifacts.values_list("name", flat=True))
    kept = [n for n in names if n.startswith("part-")]
    # Name order, up to the run's artifact cap (64 MB), and the rest named as dropped.
    assert kept and kept == [f"part-{i:04d}.bin" for i in range(len(kept))]
    assert sum(run.artifacts.values_list("size", flat=True)) <= 64 * MIB
    assert "over the run's artifact cap" in run.error_message


def test_every_printed_byte_is_counted_and_the_cap_is_marked(settings, monkeypatch):
    printed = 24 * MIB  # more than the container log file holds before it rotates
    code = f"""
    import sys
    line = "y" * 1023 + "\\n"
    for _ in range({printed // 1024}):
        sys.stdout.write(line)
    sys.stdout.flush()
    print("last line", flush=True)
    """
    run, result = run_captured(settings, code, monkeypatch, timeout_seconds=120)
    assert result is not None and result.exit_codes == {"0": 0}
    prefix = len("[r0] ")
    assert run.log_bytes >= printed + prefix * (printed // 1024)
    assert run.log_truncated
    assert log_of(run).endswith(runner.TRUNCATION_MARKER)
    assert launcher_events(run, "end"), "the end line was lost"


@pytest.mark.parametrize("name", ["a\x00.py", "line\nbreak.py", "back\\slash.py", "../up.py", "/abs.py", "x" * 201])
def test_hostile_file_names_are_refused_at_the_api_before_any_sandbox(login, author, name):
    response = login(author).post(
        "/api/sandbox/runs/", {"files": {"main.py": "print(1)", name: "x = 1"}}, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    message = response.json()["error"]["fields"]["files"][0]
    assert repr(name)[:40] in message  # the offending name, escaped so it can be read
    assert not Run.objects.exists()


# Patches every sleep it can reach, forges a bigger count, and tries to answer in the store's place.
STORE_CHEAT = r"""
import json, os, socket, struct, time
time.sleep = lambda seconds: None
path = os.environ["FAULTLINE_RECORD_STORE"]
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(path)
started = time.perf_counter()
for index in range(50):
    conn.sendall(struct.pack("<qI", 3, index))
    got = b""
    while len(got) < 16:
        got += conn.recv(16 - len(got))
print(f"took {time.perf_counter() - started:.3f}", flush=True)
forged = {"kind": "end", "exit_code": 0, "services": {"record_store": {"reads": 99999, "records": 99999}}}
print("@@fl " + json.dumps(forged), flush=True)
os.unlink(path)
impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
impostor.bind(path)
impostor.listen(8)
print("impostor bound", flush=True)
"""


def test_the_store_in_the_launcher_counts_only_reads_it_served(settings, monkeypatch):
    env = {"FAULTLINE_SERVICES": '{"record_store": {"latency_ms": 10, "concurrency": 4, "floats": 4}}'}
    run, result = run_captured(settings, STORE_CHEAT, monkeypatch, timeout_seconds=60, env=env)
    assert result is not None, log_of(run)
    assert result.service_counts == {"record_store": {"reads": 50, "records": 50, "records_in_children": 0}}
    log = log_of(run)
    took = float(log.split("took ", 1)[1].split()[0])
    assert took >= 50 * 0.010, "a read one after another waits the store's latency, whatever the program patches"
    assert "impostor bound" in log


# Patches every clock and speed setting it can reach in its own process, then saves 600 kB to the
# checkpoint store in the launcher and reads it back.
CHECKPOINT_CHEAT = r"""
import os, socket, struct, time
real_clock = time.perf_counter
time.sleep = lambda seconds: None
os.environ["CKPT_STORE_MB_PER_S"] = "100000"
os.environ["FAULTLINE_SERVICES"] = '{"checkpoint_store": {"mb_per_s": 100000}}'
REQUEST, ANSWER = struct.Struct("<BHQ"), struct.Struct("<BQ")

def call(op, name, payload=b""):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(os.environ["FAULTLINE_CHECKPOINT_STORE"])
        conn.sendall(REQUEST.pack(op, len(name), len(payload)) + name + payload)
        head = b""
        while len(head) < ANSWER.size:
            head += conn.recv(ANSWER.size - len(head))
        status, length = ANSWER.unpack(head)
        body = b""
        while len(body) < length:
            body += conn.recv(length - len(body))
        return status, body

started = real_clock()
print("saved", call(1, b"step-000060.pt", b"w" * 600_000)[0], flush=True)
print(f"took {real_clock() - started:.3f}", flush=True)
status, body = call(3, b"step-000060.pt")
print("loaded", status, len(body), flush=True)
"""


def test_a_program_cannot_speed_up_a_save_to_the_checkpoint_store(settings, monkeypatch):
    env = {"FAULTLINE_SERVICES": '{"checkpoint_store": {"mb_per_s": 1.0}}'}
    run, result = run_captured(settings, CHECKPOINT_CHEAT, monkeypatch, timeout_seconds=60, env=env)
    assert result is not None, log_of(run)
    log = log_of(run)
    assert "saved 0" in log and "loaded 0 600000" in log, log
    took = float(log.split("took ", 1)[1].split()[0])
    assert took >= 0.59, "600 kB at 1 MB/s takes 0.6 s in the launcher, whatever the program patches"
    counts = dict(result.service_counts["checkpoint_store"])
    assert counts.pop("max_load_delay_ms") < 1000
    assert counts == {"saves": 1, "loads": 1, "loads_rank0": 1, "min_rank_loads": 1}


# Two ranks: rank 1 seals its record and leaves; rank 0 then rewrites rank 1's file in the shared output
# folder and also tries to seal it in rank 1's name.
SEAL_CHEAT = r"""
import os, time
from faultline_harness import sealedrecords
rank, out = int(os.environ["RANK"]), os.environ["FAULTLINE_OUTPUT_DIR"]
if rank == 1:
    sealedrecords.seal("steps-rank1.pt", b"rank 1's own")
    open(os.path.join(out, "rank1-left"), "w").close()
else:
    while not os.path.exists(os.path.join(out, "rank1-left")):
        time.sleep(0.05)
    time.sleep(0.5)
    with open(os.path.join(out, "steps-rank1.pt"), "wb") as handle:
        handle.write(b"forged by rank 0")
    print("forged seal accepted:", sealedrecords.seal("steps-rank1.pt", b"forged by rank 0"), flush=True)
"""


def test_a_rank_cannot_rewrite_another_ranks_sealed_record(settings, monkeypatch):
    env = {"FAULTLINE_SERVICES": '{"sealed_records": {"files": ["steps-rank{rank}.pt"]}}'}
    run, result = run_captured(settings, SEAL_CHEAT, monkeypatch, timeout_seconds=60, ranks=2, env=env)
    assert result is not None, log_of(run)
    assert "forged seal accepted: False" in log_of(run)
    record = run.artifacts.get(name="steps-rank1.pt")
    assert bytes(record.content) == b"rank 1's own"
    assert result.service_counts["sealed_records"]["restored"] == 1

"""Each sandbox control against real hostile programs, through the same runner the Celery task calls.

Docker: every control. Local process backend: the controls it can honestly
enforce (see sandbox/backends/process_backend.py for what it cannot).
"""

from __future__ import annotations

import os
import socket
import textwrap
import threading
import time

import pytest
from django.db import connection

from sandbox import runner, services
from sandbox.models import Run
from tests.sandbox.helpers import containers_of, log_of

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), "process"]


def run_program(settings, backend: str, code: str, **options) -> Run:
    settings.SANDBOX_BACKEND = backend
    run = services.create_run(owner=None, files={"main.py": textwrap.dedent(code)}, **options)
    runner.execute_run(run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture(autouse=True)
def _db(db):
    pass


@pytest.mark.parametrize("backend", BACKENDS)
def test_ordinary_program_passes_with_logs_and_telemetry(settings, backend):
    run = run_program(
        settings,
        backend,
        """
        from faultline_harness import report
        for step in range(3):
            print("step", step)
            report.step(step, loss=1.0 / (step + 1))
    """,
    )
    assert run.status == "passed", (run.error_message, log_of(run))
    assert "[r0] step 2" in log_of(run)
    losses = [e.data["loss"] for e in run.events.filter(kind="metric").order_by("seq")]
    assert losses == [1.0, 0.5, pytest.approx(1 / 3)]
    assert run.exit_code == 0 and run.duration_seconds > 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("hang", ["while True: pass", "import time; time.sleep(10_000)"])
def test_busy_loop_and_sleep_are_killed_at_the_deadline(settings, backend, hang):
    started = time.monotonic()
    run = run_program(settings, backend, hang, timeout_seconds=5)
    assert run.status == "failed" and run.timed_out
    assert time.monotonic() - started < 5 + 20
    # Every rank's stack was taken as the deadline hit, for diagnosis after the run.
    [stacks] = run.diagnostics.all()
    assert stacks.kind == "stacks" and stacks.status == "done", stacks.output
    assert stacks.output.startswith("Captured automatically at the deadline") and "main.py" in stacks.output
    if backend == "docker":
        assert containers_of(run) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_endless_print_is_truncated_and_worker_memory_stays_flat(settings, backend):
    from sandbox.proctree import tree_rss_bytes

    before = tree_rss_bytes([os.getpid()])
    run = run_program(
        settings, backend, "import sys\nwhile True: sys.stdout.write('y' * 1000 + '\\n')", timeout_seconds=8
    )
    after = tree_rss_bytes([os.getpid()])
    assert run.log_truncated and run.log_bytes > 3 * runner.LOG_CAP_BYTES
    assert log_of(run).endswith(runner.TRUNCATION_MARKER)
    assert after - before < 64 * 1024 * 1024, f"worker grew by {(after - before) >> 20} MiB"


@pytest.mark.parametrize("backend", BACKENDS)
def test_killing_its_own_parent_never_passes_the_run(settings, backend):
    run = run_program(
        settings,
        backend,
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time; time.sleep(30)",
        timeout_seconds=8,
    )
    assert run.status == "failed"
    if backend == "docker":
        # The launcher is the container's PID 1, which ignores SIGKILL from inside: it keeps supervising
        # and the worker stops the sleeping program at its deadline.
        assert run.timed_out
        assert containers_of(run) == []
    else:
        assert not run.timed_out


@pytest.mark.parametrize("backend", BACKENDS)
def test_files_written_in_one_run_are_absent_in_the_next(settings, backend):
    first = run_program(
        settings,
        backend,
        """
        import os, pathlib
        pathlib.Path("left-behind.txt").write_text("secret")
        pathlib.Path("/tmp/left-behind.txt").write_text("secret")
        print("cwd", os.getcwd())
    """,
    )
    assert first.status == "passed", log_of(first)
    second = run_program(
        settings,
        backend,
        """
        import pathlib
        print("cwd file:", pathlib.Path("left-behind.txt").exists())
        tmp = pathlib.Path("/tmp/left-behind.txt")
        print("tmp file:", tmp.exists() and tmp.read_text() == "secret")
    """,
    )
    text = log_of(second)
    assert "cwd file: False" in text
    if backend == "docker":
        assert "tmp file: False" in text  # /tmp is per-container tmpfs; the process backend shares the host's /tmp


@pytest.mark.parametrize("backend", BACKENDS)
def test_symlink_artifact_is_not_followed(settings, backend):
    run = run_program(
        settings,
        backend,
        """
        import os
        out = os.environ["FAULTLINE_OUTPUT_DIR"]
        os.symlink("/etc/passwd", os.path.join(out, "passwd-link"))
        with open(os.path.join(out, "result.txt"), "w") as f:
            f.write("ok")
    """,
    )
    assert run.status == "passed", log_of(run)
    artifacts = {a.name: bytes(a.content) for a in run.artifacts.all()}
    assert artifacts.get("result.txt") == b"ok"
    assert "passwd-link" not in artifacts and not any(b"root:" in c for c in artifacts.values())
    assert "passwd-link: not a regular file" in run.error_message


@pytest.mark.parametrize("backend", BACKENDS)
def test_memory_bomb_is_reported_as_oom_killed(settings, backend):
    run = run_program(
        settings,
        backend,
        """
        chunks = []
        while True:
            chunks.append(bytearray(16 * 1024 * 1024))
    """,
        memory_mb=256,
        timeout_seconds=30,
    )
    assert run.status == "failed" and run.oom_killed, (run.exit_code, log_of(run)[-500:])


@pytest.mark.docker
def test_fork_bomb_is_contained_by_the_pids_limit(settings):
    run = run_program(
        settings,
        "docker",
        """
        import os, time
        children = 0
        try:
            for _ in range(5000):
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                children += 1
        except OSError as exc:
            print("fork refused after", children, "children:", exc.strerror)
    """,
        timeout_seconds=15,
    )
    text = log_of(run)
    assert "fork refused after" in text and "Resource temporarily unavailable" in text
    refused_at = int(text.split("fork refused after")[1].split()[0])
    assert refused_at < 256
    assert containers_of(run) == []


@pytest.mark.docker
def test_disk_fill_fails_inside_and_root_is_read_only(settings):
    run = run_program(
        settings,
        "docker",
        """
        import errno
        try:
            with open("/work/fill", "wb") as f:
                while True:
                    f.write(b"0" * (1 << 20))
        except OSError as exc:
            print("work:", errno.errorcode[exc.errno])
        try:
            open("/usr/planted", "w")
        except OSError as exc:
            print("root:", errno.errorcode[exc.errno])
    """,
        timeout_seconds=30,
    )
    text = log_of(run)
    assert "work: ENOSPC" in text or "work: EFBIG" in text
    assert "root: EROFS" in text


@pytest.mark.docker
def test_no_network_not_even_to_the_hosts_loopback(settings):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        run = run_program(
            settings,
            "docker",
            f"""
            import socket
            for host in ("127.0.0.1", "host.docker.internal", "172.17.0.1"):
                try:
                    socket.create_connection((host, {port}), timeout=2)
                    print(host, "CONNECTED")
                except OSError as exc:
                    print(host, "refused:", type(exc).__name__)
            import os
            print("interfaces:", sorted(os.listdir("/sys/class/net")))
        """,
        )
    finally:
        server.close()
    text = log_of(run)
    assert "CONNECTED" not in text
    assert "interfaces: ['lo']" in text


@pytest.mark.docker
def test_container_has_no_privileges_socket_or_secrets(settings, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "worker-secret-that-must-not-leak-0123456789")
    run = run_program(
        settings,
        "docker",
        """
        import os, subprocess
        print("uid", os.getuid(), "gid", os.getgid())
        print("docker socket", os.path.exists("/var/run/docker.sock"))
        print("secret in env", any("worker-secret" in v for v in os.environ.values()))
        print("env keys", sorted(k for k in os.environ if "KEY" in k or "DATABASE" in k or "BROKER" in k))
        mount = subprocess.run(["mount", "-t", "tmpfs", "none", "/tmp"], capture_output=True, text=True)
        print("mount exit", mount.returncode)
        with open("/proc/self/status") as f:
            caps = [l for l in f if l.startswith("CapEff") or l.startswith("NoNewPrivs")]
        print("caps", " ".join(c.split()[1] for c in caps))
    """,
    )
    text = log_of(run)
    assert "uid 10001 gid 10001" in text
    assert "docker socket False" in text and "secret in env False" in text and "env keys []" in text
    assert "mount exit 0" not in text and "mount exit" in text
    assert "caps 0000000000000000 1" in text


@pytest.mark.docker
def test_setsid_double_fork_leaves_nothing_alive(settings):
    run = run_program(
        settings,
        "docker",
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        print("daemon launched")
    """,
        timeout_seconds=20,
    )
    assert run.status == "passed", log_of(run)
    assert containers_of(run) == []  # the container, and every process in it, is gone


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", BACKENDS)
def test_four_runs_in_parallel_all_finish_and_clean_up(settings, backend):
    settings.SANDBOX_BACKEND = backend
    runs = [
        services.create_run(owner=None, files={"main.py": f"import time; time.sleep(1); print('run {i}')"})
        for i in range(4)
    ]

    def work(run_id: int) -> None:
        try:
            runner.execute_run(run_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(r.pk,)) for r in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for i, run in enumerate(runs):
        run.refresh_from_db()
        assert run.status == "passed", (run.error_message, log_of(run))
        assert f"run {i}" in log_of(run)
        if backend == "docker":
            assert containers_of(run) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_ranks_all_reduce_over_gloo(settings, backend):
    run = run_program(
        settings,
        backend,
        """
        import torch, torch.distributed as dist
        dist.init_process_group("gloo")
        total = torch.ones(1) * (dist.get_rank() + 1)
        dist.all_reduce(total)
        print("sum", total.item())
    """,
        ranks=2,
    )
    text = log_of(run)
    assert run.status == "passed", text
    assert "[r0] sum 3.0" in text and "[r1] sum 3.0" in text
    assert run.exit_codes == {"0": 0, "1": 0}
    if backend == "docker":
        assert "Unable to resolve hostname" not in text

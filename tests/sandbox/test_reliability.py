"""When things go wrong around a run: dead workers, duplicate deliveries, a stopped engine,
cancels and diagnostics while a program hangs. Real workers, real sandboxes."""

from __future__ import annotations

import signal
import threading
import time
import uuid

import pytest
from django.db import connection

from sandbox import runner, services
from sandbox.models import Run
from tests.sandbox.helpers import HANG, containers_of, in_background, log_of, start_worker, wait_for

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), "process"]

pytestmark = pytest.mark.django_db(transaction=True)


def status_of(run: Run) -> str:
    return Run.objects.values_list("status", flat=True).get(pk=run.pk)


@pytest.mark.worker
def test_real_worker_runs_a_program_end_to_end(settings, tmp_path):
    settings.SANDBOX_BACKEND = "process"
    worker = start_worker(f"e2e-{uuid.uuid4().hex[:8]}@%h", tmp_path / "worker.log", backend="process")
    try:
        run = services.create_run(owner=None, files={"main.py": "print('from the worker')"})  # enqueued on commit
        wait_for(lambda: status_of(run) in Run.TERMINAL, 90, "the worker to finish the run")
        run.refresh_from_db()
        assert run.status == "passed", (run.error_message, (tmp_path / "worker.log").read_text()[-3000:])
        assert "[r0] from the worker" in log_of(run)
        assert run.worker.startswith("e2e-")
    finally:
        worker.terminate()
        worker.wait(timeout=30)


@pytest.mark.worker
@pytest.mark.docker
def test_worker_killed_mid_run_leaves_nothing_running(settings, tmp_path):
    settings.SANDBOX_BACKEND = "docker"
    node = f"doomed-{uuid.uuid4().hex[:8]}@%h"
    log = tmp_path / "worker.log"
    worker = start_worker(node, log)
    try:
        run = services.create_run(owner=None, files={"main.py": HANG}, timeout_seconds=300)
        wait_for(lambda: status_of(run) == "running", 120, f"the run to start:\n{log.read_text()[-2000:]}")
        wait_for(lambda: containers_of(run), 10, "the run's container")
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
        assert status_of(run) == "running" and containers_of(run), "nothing reaps before a worker comes back"
        worker = start_worker(node, log)  # the same worker, restarted
        wait_for(lambda: status_of(run) == "error", 60, "the restarted worker to end the lost run")
        wait_for(lambda: not containers_of(run), 30, "the orphaned container to be removed")
        run.refresh_from_db()
        assert "platform fault" in run.error_message
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def test_the_same_task_delivered_twice_runs_once(settings):
    settings.SANDBOX_BACKEND = "process"
    run = services.create_run(owner=None, files={"main.py": "import time; time.sleep(1); print('once')"})
    results = []

    def deliver() -> None:
        try:
            results.append(runner.execute_run(run.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(results) == ["passed", "skipped"]
    run.refresh_from_db()
    assert run.deliveries == 2
    assert log_of(run).count("[r0] once") == 1


def test_stopped_docker_engine_is_a_clear_platform_error(settings, monkeypatch, tmp_path):
    settings.SANDBOX_BACKEND = "docker"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/docker.sock")
    run = services.create_run(owner=None, files={"main.py": "print(1)"})
    assert runner.execute_run(run.pk) == "error"
    run.refresh_from_db()
    assert "no Docker engine answers" in run.error_message
    assert "SANDBOX_BACKEND=docker requires it" in run.error_message


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancel_kills_the_program_within_two_seconds(settings, backend):
    settings.SANDBOX_BACKEND = backend
    run = services.create_run(owner=None, files={"main.py": HANG}, timeout_seconds=120)
    thread = in_background(run)
    wait_for(lambda: "hanging now" in log_of(run), 60, "the program")
    started = time.monotonic()
    services.cancel_run(Run.objects.get(pk=run.pk))
    wait_for(lambda: status_of(run) == "cancelled", 2.0, "the cancel to take effect")
    assert time.monotonic() - started < 2.0
    thread.join(timeout=30)
    if backend == "docker":
        assert containers_of(run) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_stack_dump_of_a_hanging_program_names_the_function(settings, backend):
    settings.SANDBOX_BACKEND = backend
    run = services.create_run(owner=None, files={"main.py": HANG}, timeout_seconds=120)
    thread = in_background(run)
    try:
        wait_for(lambda: "hanging now" in log_of(run), 60, "the program")
        diagnostic = services.request_diagnostic(Run.objects.get(pk=run.pk), "stacks", None)
        wait_for(lambda: type(diagnostic).objects.get(pk=diagnostic.pk).status == "done", 30, "the stack dump")
        output = type(diagnostic).objects.get(pk=diagnostic.pk).output
        assert "wait_forever" in output, output
        assert "rank 0" in output
    finally:
        services.cancel_run(Run.objects.get(pk=run.pk))
        thread.join(timeout=30)


# Leaves a faultline_harness package of its own wherever it can write (its working directory and the
# container's /work), one that answers every diagnostic with a forged all-clear, then hangs.
PLANTS_A_DIAG_TOOL = (
    """
import os

for folder in {os.getcwd(), "/work"}:
    package = os.path.join(folder, "faultline_harness")
    try:
        os.makedirs(package, exist_ok=True)
        open(os.path.join(package, "__init__.py"), "w").close()
        with open(os.path.join(package, "diag.py"), "w") as f:
            f.write("print('FORGED: every rank is idle and healthy')\\n")
        print("planted", package, flush=True)
    except OSError as exc:
        print("could not plant in", folder, exc, flush=True)
"""
    + HANG
)


@pytest.mark.docker
def test_a_diag_tool_planted_by_the_program_is_not_the_one_that_answers(settings):
    settings.SANDBOX_BACKEND = "docker"
    run = services.create_run(owner=None, files={"main.py": PLANTS_A_DIAG_TOOL}, timeout_seconds=120)
    thread = in_background(run)
    try:
        wait_for(lambda: "hanging now" in log_of(run), 60, "the program")
        assert "planted /work/faultline_harness" in log_of(run)  # the attack is real: /work is writable
        diagnostic = services.request_diagnostic(Run.objects.get(pk=run.pk), "stacks", None)
        wait_for(lambda: type(diagnostic).objects.get(pk=diagnostic.pk).status == "done", 30, "the stack dump")
        output = type(diagnostic).objects.get(pk=diagnostic.pk).output
        assert "FORGED" not in output
        assert "wait_forever" in output, output
    finally:
        services.cancel_run(Run.objects.get(pk=run.pk))
        thread.join(timeout=30)

"""Small helpers shared by the real-sandbox tests."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.db import connection

from sandbox import runner
from sandbox.instance import instance_filter
from sandbox.models import Run

REPO = Path(__file__).resolve().parents[2]
# A program that announces itself, then waits in a function a stack dump can name.
HANG = """
import time

def wait_forever():
    while True:
        time.sleep(0.2)

print("hanging now", flush=True)
wait_forever()
"""


def log_of(run: Run) -> str:
    return "".join(run.log_chunks.values_list("text", flat=True))


def containers_of(run: Run) -> list:
    """Docker containers (running or not) labelled with this run, or the warm-pool container handed to it
    (pool containers are made before their run, so only Run.container_id links them)."""
    import docker

    client = docker.from_env()
    # This instance's only: another database's run with the same id (a second checkout, a validation
    # process) labels its containers with the same run id.
    found = client.containers.list(all=True, filters=instance_filter(f"faultline.run={run.pk}"), ignore_removed=True)
    container_id = Run.objects.filter(pk=run.pk).values_list("container_id", flat=True).first()
    if container_id and all(c.id != container_id for c in found):
        found += client.containers.list(all=True, filters={"id": container_id}, ignore_removed=True)
    return found


def in_background(run: Run, worker_name: str | None = None) -> threading.Thread:
    """Execute the run on a thread, as a worker would; the thread closes its own database connection."""

    def work() -> None:
        try:
            runner.execute_run(run.pk, worker_name=worker_name)
        finally:
            connection.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def wait_for(predicate, timeout: float, what: str):
    """The predicate's first truthy value, polled every 0.1 s; a timeout fails the test naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def start_worker(
    node: str, log: Path, *, backend: str = "docker", queue: str = "cpu", pool_size: int | None = None
) -> subprocess.Popen:
    """A real Celery worker (solo pool) on the current test database; ``pool_size`` sets its warm pool."""
    from tests.faultline.test_worker_roundtrip import database_url_for_current_test_db

    env = dict(os.environ, DATABASE_URL=database_url_for_current_test_db(), SANDBOX_BACKEND=backend)
    if pool_size is not None:
        env["SANDBOX_WARM_POOL_CPU"] = str(pool_size)
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "faultline", "worker", "--pool", "solo", "--queues", queue,
         "--hostname", node, "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
        cwd=REPO, env=env, stdout=open(log, "a"), stderr=subprocess.STDOUT,
    )  # fmt: skip

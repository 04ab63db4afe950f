"""Small helpers shared by the real-sandbox tests."""

from __future__ import annotations

import threading

from django.db import connection

from sandbox import runner
from sandbox.models import Run


def log_of(run: Run) -> str:
    return "".join(run.log_chunks.values_list("text", flat=True))


def containers_of(run: Run) -> list:
    """Docker containers (running or not) labelled with this run, or the warm-pool container handed to it
    (pool containers are made before their run, so only Run.container_id links them)."""
    import docker

    client = docker.from_env()
    found = client.containers.list(all=True, filters={"label": f"faultline.run={run.pk}"}, ignore_removed=True)
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

"""A real Celery worker process takes a task from the configured broker and
writes to the configured database: filesystem broker + SQLite by default,
Redis + PostgreSQL in the second CI pass."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

from faultline.models import WorkerPing
from faultline.tasks import ping

REPO = Path(__file__).resolve().parents[2]


def database_url_for_current_test_db() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    auth = quote(db["USER"]) + (":" + quote(db["PASSWORD"]) if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_task_round_trip_through_broker_and_real_worker(tmp_path):
    token = uuid.uuid4().hex
    # A queue of its own: whatever else is waiting in a shared broker must not stand in front of the ping.
    queue = f"roundtrip-{token[:8]}"
    # The warm container pool is not what this test is about, and on a loaded machine filling it
    # makes the worker slow to start and to stop.
    env = dict(os.environ, DATABASE_URL=database_url_for_current_test_db(), SANDBOX_WARM_POOL_CPU="0")
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "faultline",
            "worker",
            "--pool",
            "solo",
            "--queues",
            queue,
            "--hostname",
            f"test-{token[:8]}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel",
            "WARNING",
        ],
        cwd=REPO,
        env=env,
        stdout=open(tmp_path / "worker.log", "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        ping.apply_async(args=[token], queue=queue)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not WorkerPing.objects.filter(token=token).exists():
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            time.sleep(0.3)
        row = WorkerPing.objects.filter(token=token).first()
        assert row is not None, "worker never answered:\n" + (tmp_path / "worker.log").read_text()
        assert row.hostname.startswith(f"test-{token[:8]}@")
    finally:
        worker.terminate()
        worker.wait(timeout=60)

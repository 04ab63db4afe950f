"""Celery entry points: thin wrappers around plain functions."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from sandbox import reaper, runner


@shared_task(
    bind=True,
    name="sandbox.execute_run",
    acks_late=True,
    reject_on_worker_lost=True,
    # Backstops above the worker's own deadline enforcement.
    soft_time_limit=settings.SANDBOX_MAX_RUN_SECONDS + 120,
    time_limit=settings.SANDBOX_MAX_RUN_SECONDS + 180,
)
def execute_run(self, run_id: int) -> str:
    return runner.execute_run(run_id, worker_name=self.request.hostname)


@shared_task(name="sandbox.reap")
def reap() -> dict:
    return reaper.reap().as_dict()

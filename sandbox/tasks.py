"""Celery entry points: thin wrappers around plain functions."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from sandbox import reaper, runner
from sandbox.models import Run
from sandbox.pausing import PAUSE_BUDGET_S


@shared_task(
    bind=True,
    name="sandbox.execute_run",
    acks_late=True,
    reject_on_worker_lost=True,
    # Backstops above the worker's own deadline enforcement, which a paused practice run moves on.
    soft_time_limit=settings.SANDBOX_MAX_RUN_SECONDS + PAUSE_BUDGET_S + 120,
    time_limit=settings.SANDBOX_MAX_RUN_SECONDS + PAUSE_BUDGET_S + 180,
)
def execute_run(self, run_id: int | None = None, queue: str | None = None) -> str:
    """Sent once per run (``run_id``) and as a wake-up (``queue``); either way the slot starts the fairest
    queued run of the queue, which need not be ``run_id`` (see sandbox.dispatch)."""
    if queue is None:
        queue = Run.objects.filter(pk=run_id).values_list("queue", flat=True).first() or Run.Queue.CPU
    return runner.execute_next(queue, worker_name=self.request.hostname)


@shared_task(name="sandbox.reap")
def reap() -> dict:
    return reaper.reap().as_dict()

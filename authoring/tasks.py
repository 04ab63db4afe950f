"""Celery entry points for authoring: thin wrappers around plain functions (sent to the ``authoring`` queue
by :func:`authoring.lab_publishing.enqueue_validation`)."""

from __future__ import annotations

from celery import shared_task

from authoring import lab_publishing


# Up to 20 seeds × every variant, each run up to the lab's time limit: hours at worst.
@shared_task(name="authoring.run_validation", soft_time_limit=6 * 3600, time_limit=6 * 3600 + 120)
def run_validation(job_id: int) -> str:
    return lab_publishing.run_validation_job(job_id).status

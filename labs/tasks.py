"""Celery entry points for labs: thin wrappers around plain functions."""

from __future__ import annotations

from celery import shared_task

from labs import validation


@shared_task(name="labs.validate_pending", soft_time_limit=3 * 3600, time_limit=3 * 3600 + 120)
def validate_pending(seeds: int = 1) -> list[str]:
    return validation.validate_pending(seeds)

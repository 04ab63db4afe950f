"""Celery entry points for interviews: thin wrappers around plain functions."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from interviews import clock
from interviews.models import Interview


@shared_task(name="interviews.settle")
def settle_interview(interview_id: int) -> str:
    interview = Interview.objects.filter(pk=interview_id).first()
    if interview is None:
        return "gone"
    return clock.settle(interview).status


def schedule_end_check(interview: Interview) -> None:
    """Ask a worker to settle the interview when it is due; asked again whenever time is added or an item
    with a time box opens (a check that comes early settles nothing)."""
    due = [interview.ends_at] + [item.ends_at for item in interview.items.filter(closed_at__isnull=True)]
    due = [when for when in due if when is not None]
    for eta in sorted(set(due)):
        transaction.on_commit(lambda eta=eta: settle_interview.apply_async(args=[interview.pk], eta=eta))

"""Server time is the authority: when an interview's or an item's time is over, its answers freeze.

:func:`settle` runs at the top of every read and action on an interview, so nothing can be saved
after the end even when no worker is up; a Celery task scheduled for the end time
(``tasks.schedule_end_check``) does the same for an interview nobody is looking at, so running lab
runs are cancelled on time.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from interviews.audit import record
from interviews.models import Event, Interview, InterviewItem, ItemKind
from labs import services as lab_services
from questions.services import submit_practice_answer


@transaction.atomic
def close_item(item: InterviewItem, actor=None, reason: str = "time") -> bool:
    """Freeze one item: a question's draft becomes its scored answer, a lab's attempt is closed and its
    runs cancelled. True when this call froze it."""
    if InterviewItem.objects.filter(pk=item.pk, closed_at__isnull=True).update(closed_at=timezone.now()) != 1:
        return False
    item.refresh_from_db()
    interview = item.interview
    if item.kind == ItemKind.QUESTION:
        if item.draft.strip() and interview.candidate_id:
            answer = submit_practice_answer(interview.candidate, item.question, item.draft, for_interview=True)
            InterviewItem.objects.filter(pk=item.pk).update(answer=answer)
            item.answer = answer
            record(interview, Event.Kind.ITEM_ANSWERED, actor, item, reason=reason, characters=len(answer.text))
        else:
            record(interview, Event.Kind.ITEM_TIME_UP, actor, item, reason=reason, characters=0)
    else:
        cancelled = lab_services.close_attempt(item.attempt) if item.attempt_id else []
        kind = Event.Kind.ITEM_ANSWERED if reason == "candidate" else Event.Kind.ITEM_TIME_UP
        record(interview, kind, actor, item, reason=reason, cancelled_runs=cancelled)
    return True


@transaction.atomic
def finish(interview: Interview, actor=None, reason: str = "time") -> bool:
    """In progress → awaiting scoring: every item frozen, running lab runs cancelled. Once."""
    if not Interview.finish(interview.pk):
        return False
    for item in interview.items.select_related("interview__candidate", "question", "attempt"):
        close_item(item, actor, reason)
    record(interview, Event.Kind.FINISHED, actor, reason=reason)
    interview.refresh_from_db()
    return True


def settle(interview: Interview) -> Interview:
    """Apply whatever the clock says is over; returns the interview as it now stands."""
    if interview.status != Interview.Status.IN_PROGRESS:
        return interview
    now = timezone.now()
    if now >= interview.ends_at:
        finish(interview)
        interview.refresh_from_db()
        return interview
    for item in interview.items.filter(closed_at__isnull=True, opened_at__isnull=False, time_box_seconds__isnull=False):
        if item.ends_at <= now:
            close_item(item)
    return interview

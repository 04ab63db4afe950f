"""What the candidate does in an interview: start it, open items, autosave answers, finish."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from interviews import clock
from interviews.audit import record
from interviews.errors import InterviewRefused
from interviews.models import AnswerSnapshot, Event, Interview, InterviewItem, ItemKind
from interviews.tasks import schedule_end_check
from labs import services as lab_services
from labs.models import Attempt
from questions.models import PracticeAnswer


def start(interview: Interview) -> Interview:
    interview = clock.settle(interview)
    if interview.status == Interview.Status.IN_PROGRESS:
        return interview
    if interview.status != Interview.Status.SCHEDULED:
        raise InterviewRefused(_("this interview is over"))
    now = timezone.now()
    if now < interview.window_opens_at:
        raise InterviewRefused(
            _("the interview opens at %(time)s UTC") % {"time": f"{interview.window_opens_at:%Y-%m-%d %H:%M}"}
        )
    if now > interview.window_closes_at:
        raise InterviewRefused(_("the time to start this interview has passed: ask your interviewer for a new one"))
    with transaction.atomic():
        if Interview.start(interview.pk):
            interview.refresh_from_db()
            record(interview, Event.Kind.STARTED, interview.candidate)
            schedule_end_check(interview)
    interview.refresh_from_db()
    return interview


def _answerable(item: InterviewItem) -> InterviewItem:
    clock.settle(item.interview)
    item.refresh_from_db()
    item.interview.refresh_from_db()
    if item.interview.status == Interview.Status.SCHEDULED:
        raise InterviewRefused(_("start the interview first"))
    if not item.interview.answerable or item.closed_at is not None:
        raise InterviewRefused(_("time is up for this item: your answer as last saved is kept"))
    return item


@transaction.atomic
def open_item(item: InterviewItem) -> InterviewItem:
    """The candidate opens an item: its time box starts, and a lab gets its attempt on the fixed seed."""
    if item.opened_at is None:
        item = _answerable(item)
    item = InterviewItem.objects.select_for_update(of=("self",)).select_related("interview__candidate").get(pk=item.pk)
    if item.opened_at is None:
        item.opened_at = timezone.now()
        item.save(update_fields=["opened_at"])
        record(item.interview, Event.Kind.ITEM_OPENED, item.interview.candidate, item)
        if item.time_box_seconds:
            schedule_end_check(item.interview)
    if item.kind == ItemKind.LAB and item.attempt_id is None and item.closed_at is None:
        try:
            item.attempt = lab_services.start_attempt(
                item.interview.candidate, item.lab, version=item.lab_version, seed=item.seed,
                purpose=Attempt.Purpose.INTERVIEW,
            )  # fmt: skip
        except lab_services.LabRefused as exc:
            raise InterviewRefused(str(exc)) from None
        item.save(update_fields=["attempt"])
    return item


def autosave(item: InterviewItem, text: str) -> InterviewItem:
    """Keep the draft; every change is a snapshot the review replays. Refused once the item is frozen."""
    if item.kind != ItemKind.QUESTION:
        raise InterviewRefused(_("a lab is answered in its workspace"))
    if not isinstance(text, str):
        raise InterviewRefused(_("text: a string"), "text")
    if len(text) > PracticeAnswer.MAX_LENGTH:
        raise InterviewRefused(
            _("text: answers are limited to %(limit)d characters; yours has %(length)d")
            % {"limit": PracticeAnswer.MAX_LENGTH, "length": len(text)},
            "text",
        )
    item = _answerable(item)
    if item.opened_at is None:
        item = open_item(item)
    if text == item.draft:
        return item
    with transaction.atomic():
        if not InterviewItem.save_draft(item.pk, text):
            raise InterviewRefused(_("time is up for this item: your answer as last saved is kept"))
        AnswerSnapshot.objects.create(item=item, text=text)
    item.refresh_from_db()
    return item


def submit_item(item: InterviewItem) -> InterviewItem:
    """The candidate says an item is done: it is frozen now rather than at the end."""
    item = _answerable(item)
    clock.close_item(item, item.interview.candidate, reason="candidate")
    item.refresh_from_db()
    return item


def finish_early(interview: Interview) -> Interview:
    interview = clock.settle(interview)
    if interview.status != Interview.Status.IN_PROGRESS:
        raise InterviewRefused(_("this interview is not in progress"))
    clock.finish(interview, interview.candidate, reason="candidate")
    interview.refresh_from_db()
    return interview


def candidate_messages(interview: Interview) -> list[Event]:
    """Hints, notes and added time the interviewers sent, oldest first."""
    return list(interview.events.filter(kind__in=Event.CANDIDATE_VISIBLE).select_related("item"))

"""What interviewers do during an interview: release a hint, add time, send a note. Each is recorded."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils.translation import gettext as _

from interviews import clock
from interviews.audit import record
from interviews.errors import InterviewRefused
from interviews.models import Event, Interview, InterviewItem, ItemKind
from interviews.tasks import schedule_end_check
from labs import services as lab_services

MAX_NOTE_CHARS = 1000
MAX_ADDED_MINUTES = 120


def _live(interview: Interview, allow_scheduled: bool = False) -> Interview:
    interview = clock.settle(interview)
    allowed = {Interview.Status.IN_PROGRESS} | ({Interview.Status.SCHEDULED} if allow_scheduled else set())
    if interview.status not in allowed:
        raise InterviewRefused(_("the interview is not in progress"))
    return interview


def _text(text: str, field: str = "text") -> str:
    text = (text or "").strip()
    if len(text) > MAX_NOTE_CHARS:
        raise InterviewRefused(_("%(field)s: at most %(n)d characters") % {"field": field, "n": MAX_NOTE_CHARS}, field)
    return text


@transaction.atomic
def release_hint(interview: Interview, item: InterviewItem, by, text: str = "") -> Event:
    """A written hint, or for a lab with no text given, the lab's next built-in hint (its cost applies)."""
    interview = _live(interview)
    text = _text(text)
    if item.closed_at is not None:
        raise InterviewRefused(_("this item is already closed"))
    if text:
        return record(interview, Event.Kind.HINT_RELEASED, by, item, text=text)
    if item.kind != ItemKind.LAB:
        raise InterviewRefused(_("text: write the hint"), "text")
    if item.attempt_id is None:
        raise InterviewRefused(_("the candidate has not opened this lab yet: write the hint instead"))
    taken = set(item.attempt.hint_reveals.values_list("index", flat=True))
    index = next((i for i in range(len(item.lab_version.spec["hints"])) if i not in taken), None)
    if index is None:
        raise InterviewRefused(_("every built-in hint of this lab is released: write the hint instead"))
    try:
        reveal = lab_services.reveal_hint(item.attempt, index)
    except lab_services.LabRefused as exc:
        raise InterviewRefused(str(exc)) from None
    return record(interview, Event.Kind.HINT_RELEASED, by, item, lab_hint=index, cost=reveal.cost)


@transaction.atomic
def add_time(interview: Interview, by, minutes: int, item: InterviewItem | None = None) -> Event:
    interview = _live(interview, allow_scheduled=item is None)
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= MAX_ADDED_MINUTES:
        raise InterviewRefused(_("minutes: a whole number from 1 to %(n)d") % {"n": MAX_ADDED_MINUTES}, "minutes")
    seconds = minutes * 60
    if item is None:
        Interview.objects.filter(pk=interview.pk).update(extra_seconds=F("extra_seconds") + seconds)
    else:
        if item.time_box_seconds is None:
            raise InterviewRefused(_("this item has no time box: add time to the interview instead"))
        if item.closed_at is not None:
            raise InterviewRefused(_("this item is already closed"))
        InterviewItem.objects.filter(pk=item.pk).update(extra_seconds=F("extra_seconds") + seconds)
    interview.refresh_from_db()
    schedule_end_check(interview)
    return record(interview, Event.Kind.TIME_ADDED, by, item, seconds=seconds)


def send_note(interview: Interview, by, text: str) -> Event:
    interview = _live(interview)
    text = _text(text)
    if not text:
        raise InterviewRefused(_("text: write the note"), "text")
    return record(interview, Event.Kind.NOTE_SENT, by, text=text)

"""What the interviewers' live view shows, and the actions it offers (hint, time, note).

The page polls :func:`live_state` about once a second, so it is built to stay cheap: run output is
sent incrementally from the page's cursors (``after``), and only for the runs the page follows (the
latest run of each lab, plus any the page asked for).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone
from django.utils.translation import gettext

from core.contentlang import content_language
from interviews import clock, steering
from interviews.errors import InterviewRefused
from interviews.models import Event, Interview, InterviewItem, ItemKind
from labs.models import Attempt, LabRun
from labs.presenters import lab_run_payload, pick, timeline
from labs.services import current_score
from questions.models import current_lang

# What the charts and the log need; the rest of the telemetry (stack dumps, …) is for the review.
EVENT_KINDS = ("metric", "memory", "cuda_memory", "rank_exit")
LOG_CHUNKS = 200
EVENT_LIMIT = 3000
MAX_FOLLOWED = 20


@dataclass(frozen=True)
class Cursor:
    """How much of one run's output the page already has."""

    log: int = 0
    events: int = 0


def parse_cursors(raw: str | None) -> dict[int, Cursor]:
    """``"12:40:300,13:0:0"`` → run 12 has log chunks up to 40 and events up to 300. InterviewRefused
    names the ``after`` parameter when it is malformed."""
    cursors: dict[int, Cursor] = {}
    for part in (raw or "").split(","):
        part = part.strip()
        if not part:
            continue
        pieces = part.split(":")
        try:
            numbers = [int(p) for p in pieces]
        except ValueError:
            numbers = []
        if len(numbers) != 3 or min(numbers) < 0:
            raise InterviewRefused(gettext("after: expected run:log_seq:event_seq, separated by commas"), "after")
        cursors[numbers[0]] = Cursor(numbers[1], numbers[2])
        if len(cursors) > MAX_FOLLOWED:
            raise InterviewRefused(gettext("after: at most %(n)d runs at a time") % {"n": MAX_FOLLOWED}, "after")
    return cursors


def item_state(item: InterviewItem) -> str:
    if item.closed_at is not None:
        return "closed"
    if item.opened_at is not None:
        return "open"
    return "not_opened"


def _state_label(state: str) -> str:
    return {"closed": gettext("closed"), "open": gettext("open"), "not_opened": gettext("not opened")}[state]


def item_title(item: InterviewItem, language: str | None) -> str:
    if item.kind == ItemKind.QUESTION:
        lang = current_lang() if language is None else content_language(language)
        return item.question.localized("title", lang)
    return pick(item.lab_version.spec["title"], language)


def run_output(lab_run: LabRun, cursor: Cursor | None) -> dict:
    """New log chunks and telemetry since ``cursor``; without one, the log's tail and the events from
    the start (the charts need the whole series)."""
    run = lab_run.run
    chunks = run.log_chunks.all()
    if cursor is None:
        log = list(chunks.order_by("-seq").values("seq", "text")[:LOG_CHUNKS])[::-1]
        events_after = 0
    else:
        log = list(chunks.filter(seq__gt=cursor.log).order_by("seq").values("seq", "text")[:LOG_CHUNKS])
        events_after = cursor.events
    events = list(
        run.events.filter(seq__gt=events_after, kind__in=EVENT_KINDS)
        .order_by("seq")
        .values("seq", "kind", "rank", "t", "data")[:EVENT_LIMIT]
    )
    return {
        "run": lab_run.pk,
        "log": log,
        "events": events,
        "log_seq": log[-1]["seq"] if log else (cursor.log if cursor else 0),
        "event_seq": events[-1]["seq"] if events else (cursor.events if cursor else 0),
        # More is waiting: the page asks again at once instead of after its interval.
        "more": len(log) == LOG_CHUNKS and cursor is not None or len(events) == EVENT_LIMIT,
        "log_truncated": run.log_truncated,
    }


def _lab_state(item: InterviewItem, language: str | None, cursors: dict[int, Cursor]) -> dict:
    spec = item.lab_version.spec
    data: dict = {"seed": item.seed, "version": item.lab_version.number, "attempt": None}
    attempt: Attempt | None = item.attempt
    if attempt is None:
        return data
    lab_runs = list(attempt.lab_runs.select_related("run").order_by("created_at", "pk"))
    runs = [lab_run_payload(lab_run, language, full=False, sealed=False) for lab_run in lab_runs]
    followed = {lab_run.pk for lab_run in lab_runs[-1:]} | {pk for pk in cursors if any(r.pk == pk for r in lab_runs)}
    revealed = {h.index: h for h in attempt.hint_reveals.all()}
    options = {o["key"]: pick(o, language) for o in spec["diagnosis"]["options"]}
    data["attempt"] = {
        "id": attempt.pk,
        "closed": attempt.closed_at is not None,
        "runs": runs,
        "fixes": [r for r in runs if r["kind"] == LabRun.Kind.FIX],
        "output": [run_output(r, cursors.get(r.pk)) for r in lab_runs if r.pk in followed],
        "timeline": timeline(attempt, language, sealed=False),
        "diagnosis": {
            "root_cause": attempt.diagnosis_choice,
            "root_cause_text": options.get(attempt.diagnosis_choice, ""),
            "text": attempt.diagnosis_text,
            "score": attempt.diagnosis_score,
            "detail": attempt.diagnosis_detail,
            "at": attempt.diagnosed_at,
            "draft": {
                **attempt.diagnosis_draft,
                "root_cause_text": options.get(attempt.diagnosis_draft.get("root_cause", ""), ""),
            }
            if attempt.diagnosis_draft
            else None,
        },
        "hints": [
            {"index": i, "cost": h["cost"], "released": i in revealed, "text": pick(h, language)}
            for i, h in enumerate(spec["hints"])
        ],
        "score": current_score(attempt),
        "best_score": attempt.best_score,
    }
    return data


def message_payload(event: Event) -> dict:
    detail = event.detail or {}
    return {
        "id": event.pk,
        "kind": event.kind,
        "kind_label": event.get_kind_display(),
        "item": event.item_id,
        "text": detail.get("text", ""),
        "seconds": detail.get("seconds"),
        "lab_hint": detail.get("lab_hint"),
        "actor": event.actor.get_username() if event.actor else "",
        "at": event.created_at,
    }


def live_state(interview: Interview, language: str | None, cursors: dict[int, Cursor] | None = None) -> dict:
    """Everything the live page shows, as of now (the clock is settled first)."""
    interview = clock.settle(interview)
    interview.refresh_from_db()
    cursors = cursors or {}
    now = timezone.now()
    items = []
    for item in interview.items.select_related("question", "lab_version", "attempt").order_by("position"):
        state = item_state(item)
        box_left = None
        if item.time_box_seconds is not None:
            if item.ends_at is None:
                box_left = item.time_box_seconds + item.extra_seconds
            elif state == "open":
                box_left = max(0, int((item.ends_at - now).total_seconds()))
            else:
                box_left = 0
        entry = {
            "id": item.pk,
            "position": item.position + 1,
            "kind": item.kind,
            "title": item_title(item, language),
            "state": state,
            "state_label": _state_label(state),
            "opened_at": item.opened_at,
            "closed_at": item.closed_at,
            "time_box_seconds": item.time_box_seconds,
            "extra_seconds": item.extra_seconds,
            "time_box_left": box_left,
        }
        if item.kind == ItemKind.QUESTION:
            entry.update(draft=item.draft, draft_saved_at=item.draft_saved_at, answered=item.answer_id is not None)
        else:
            entry.update(_lab_state(item, language, cursors))
        items.append(entry)
    messages = interview.events.filter(kind__in=Event.CANDIDATE_VISIBLE).select_related("actor")
    return {
        "id": interview.pk,
        "title": interview.title,
        "candidate": interview.candidate_name,
        "status": interview.status,
        "status_label": interview.get_status_display(),
        "started_at": interview.started_at,
        "ends_at": interview.ends_at,
        "seconds_left": interview.seconds_left(now),
        "extra_seconds": interview.extra_seconds,
        "server_time": now,
        "items": items,
        "messages": [message_payload(e) for e in messages],
    }


ACTIONS = ("hint", "time", "note")


def perform(interview: Interview, by, action: str, data) -> Event:
    """One interviewer action from the live page or the API; InterviewRefused names the field."""
    item = None
    raw_item = data.get("item") if hasattr(data, "get") else None
    if raw_item not in (None, ""):
        try:
            item = interview.items.select_related("attempt", "lab_version").get(pk=int(raw_item))
        except (ValueError, TypeError, InterviewItem.DoesNotExist):
            raise InterviewRefused(gettext("item: not an item of this interview"), "item") from None
    if action == "hint":
        if item is None:
            raise InterviewRefused(gettext("item: choose the item the hint is for"), "item")
        return steering.release_hint(interview, item, by, str(data.get("text") or ""))
    if action == "time":
        raw = data.get("minutes")
        if isinstance(raw, bool | float):
            raw = None
        try:
            minutes = int(raw)
        except (ValueError, TypeError):
            raise InterviewRefused(gettext("minutes: a whole number of minutes"), "minutes") from None
        return steering.add_time(interview, by, minutes, item)
    if action == "note":
        return steering.send_note(interview, by, str(data.get("text") or ""))
    raise InterviewRefused(gettext("action: one of hint, time, note"), "action")

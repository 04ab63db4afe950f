"""The candidate's side of an interview over JSON: its state, autosave, done, start, finish, preview.

The interview page polls :class:`TakeStateView` and re-syncs its countdowns from what it returns:
the server's clock is the authority, so every endpoint settles the interview first (the services
in ``taking`` do). Nothing here ever carries a reference answer, a rubric or a score.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from interviews import access, clock, taking
from interviews.errors import InterviewRefused
from interviews.models import Event, Interview, InterviewItem, ItemKind
from labs.presenters import pick
from questions.models import PracticeAnswer, current_lang
from questions.rendering import render_markdown


# ---- what the candidate is shown -------------------------------------------------------------------
def item_title(item: InterviewItem, lang: str | None = None) -> str:
    lang = lang or current_lang()
    if item.kind == ItemKind.QUESTION:
        return item.question.localized("title", lang)
    version = item.attempt.version if item.attempt_id else item.lab_version
    return pick(version.spec["title"], lang)


def item_state(item: InterviewItem) -> str:
    if item.closed_at is not None:
        return "closed"
    return "open" if item.opened_at is not None else "not_opened"


def item_seconds_left(item: InterviewItem, now=None) -> int | None:
    """Seconds left in the item's own time box; None when it has none or has not started it."""
    if item.closed_at is not None:
        return 0 if item.time_box_seconds else None
    if item.ends_at is None:
        return None
    return max(0, int((item.ends_at - (now or timezone.now())).total_seconds()))


def kept_answer(item: InterviewItem) -> str:
    """The text the interviewers score: the frozen answer once there is one, the last autosave before."""
    if item.answer_id is not None:
        return item.answer.text
    return item.draft


def message_text(event: Event, lang: str | None = None) -> str:
    detail = event.detail or {}
    if event.kind == Event.Kind.TIME_ADDED:
        minutes = max(1, round(detail.get("seconds", 0) / 60))
        if event.item_id:
            return ngettext(
                "%(minutes)d minute was added to this item.", "%(minutes)d minutes were added to this item.", minutes
            ) % {"minutes": minutes}
        return ngettext(
            "%(minutes)d minute was added to the interview.",
            "%(minutes)d minutes were added to the interview.",
            minutes,
        ) % {"minutes": minutes}
    if "lab_hint" in detail and event.item_id:
        item = event.item
        version = item.attempt.version if item.attempt_id else item.lab_version
        hints = version.spec["hints"]
        index = detail["lab_hint"]
        if 0 <= index < len(hints):
            return pick(hints[index], lang or current_lang())
    return str(detail.get("text", ""))


def message_payload(event: Event, lang: str | None = None) -> dict:
    labels = {
        Event.Kind.HINT_RELEASED: _("Hint"),
        Event.Kind.NOTE_SENT: _("Note"),
        Event.Kind.TIME_ADDED: _("More time"),
    }
    return {
        "id": event.pk,
        "kind": event.kind,
        "label": str(labels.get(event.kind, event.get_kind_display())),
        "item": event.item.position + 1 if event.item_id else None,
        "item_title": item_title(event.item, lang) if event.item_id else "",
        "text": message_text(event, lang),
        "created_at": event.created_at.isoformat(),
    }


def item_payload(item: InterviewItem, lang: str | None = None, now=None) -> dict:
    data = {
        "id": item.pk,
        "position": item.position + 1,
        "kind": item.kind,
        "title": item_title(item, lang),
        "state": item_state(item),
        "opened": item.opened_at is not None,
        "closed": item.closed_at is not None,
        "time_box_seconds": item.time_box_seconds + item.extra_seconds if item.time_box_seconds else None,
        "time_box_minutes": -(-(item.time_box_seconds + item.extra_seconds) // 60) if item.time_box_seconds else None,
        "ends_in": item_seconds_left(item, now),
        "ends_at": item.ends_at.isoformat() if item.ends_at else None,
        "url": reverse("interviews:take-item", args=[item.interview_id, item.pk]),
    }
    if item.kind == ItemKind.QUESTION:
        data["draft"] = kept_answer(item)
        data["draft_saved_at"] = item.draft_saved_at.isoformat() if item.draft_saved_at else None
    else:
        data["attempt"] = item.attempt_id
    return data


def interview_state(interview: Interview, lang: str | None = None) -> dict:
    """Everything the candidate's pages show, as of now (call after ``clock.settle``)."""
    lang = lang or current_lang()
    now = timezone.now()
    items = interview.items.select_related("question", "lab_version", "attempt__version", "answer")
    # What is asked stays unseen until the clock runs: before the start only the count is told.
    shown = list(items) if interview.started_at is not None else []
    return {
        "id": interview.pk,
        "title": interview.title,
        "status": interview.status,
        "status_label": str(interview.get_status_display()),
        "server_time": now.isoformat(),
        "started_at": interview.started_at.isoformat() if interview.started_at else None,
        "ends_at": interview.ends_at.isoformat() if interview.ends_at else None,
        "seconds_left": interview.seconds_left(now),
        "duration_minutes": interview.duration_minutes,
        "item_count": len(shown) if shown else interview.items.count(),
        "items": [item_payload(item, lang, now) for item in shown],
        "messages": [message_payload(event, lang) for event in taking.candidate_messages(interview)],
    }


def settled_interview(request, pk: int) -> Interview:
    return clock.settle(access.candidate_interview(request, pk))


def candidate_item(interview: Interview, item_pk: int) -> InterviewItem:
    """An item of this interview; an id from another interview is a 404."""
    return get_object_or_404(
        InterviewItem.objects.select_related("interview__candidate", "question", "attempt"),
        pk=item_pk,
        interview=interview,
    )


# ---- endpoints ----------------------------------------------------------------------------------------


class TextSerializer(serializers.Serializer):
    text = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=PracticeAnswer.MAX_LENGTH)


class TakeStateView(APIView):
    """The interview as the candidate sees it: status, time left, items, the interviewers' messages."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        return Response(interview_state(settled_interview(request, pk)))


class TakeStartView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, pk: int) -> Response:
        interview = access.candidate_interview(request, pk)
        try:
            interview = taking.start(interview)
        except InterviewRefused as exc:
            raise exc.as_api_error() from exc
        return Response(interview_state(interview))


class TakeFinishView(APIView):
    """Hand in everything now; the interview then waits for scoring."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, pk: int) -> Response:
        interview = access.candidate_interview(request, pk)
        try:
            interview = taking.finish_early(interview)
        except InterviewRefused as exc:
            raise exc.as_api_error() from exc
        return Response(interview_state(interview))


class TakeItemOpenView(APIView):
    """Open an item: its time box starts; a lab gets its attempt (``attempt``) to work in."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, pk: int, item_pk: int) -> Response:
        interview = settled_interview(request, pk)
        try:
            item = taking.open_item(candidate_item(interview, item_pk))
        except InterviewRefused as exc:
            raise exc.as_api_error() from exc
        return Response(item_payload(item))


class TakeDraftView(APIView):
    """Autosave a question's answer (Markdown). Refused once its time is up; the last save is kept."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=TextSerializer, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request, pk: int, item_pk: int) -> Response:
        interview = access.candidate_interview(request, pk)
        item = candidate_item(interview, item_pk)
        serializer = TextSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            item = taking.autosave(item, serializer.validated_data["text"])
        except InterviewRefused as exc:
            raise exc.as_api_error() from exc
        return Response(item_payload(item))

    post = put  # a page closing sends its last save with sendBeacon-style POSTs too


class TakeDoneView(APIView):
    """The candidate is done with an item: it is frozen now."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, pk: int, item_pk: int) -> Response:
        interview = access.candidate_interview(request, pk)
        item = candidate_item(interview, item_pk)
        try:
            item = taking.submit_item(item)
        except InterviewRefused as exc:
            raise exc.as_api_error() from exc
        return Response(item_payload(item))


class PreviewView(APIView):
    """Markdown → sanitised HTML, for the answer's Preview tab."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=TextSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request) -> Response:
        serializer = TextSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response({"html": render_markdown(serializer.validated_data["text"])})

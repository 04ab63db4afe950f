"""The interviewers' live API: the state the live page polls, and its actions (hint, time, note)."""

from __future__ import annotations

from django.utils.translation import get_language
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from interviews import access, live
from interviews.errors import InterviewRefused


class LiveView(APIView):
    """The interview as it stands now. Follow runs' output incrementally with ``after``."""

    @extend_schema(
        tags=["interviews"],
        parameters=[
            OpenApiParameter(
                "after", str, description="run:log_seq:event_seq for each followed run, separated by commas"
            )
        ],
    )
    def get(self, request: Request, pk: int) -> Response:
        interview = access.interviewer_interview(request.user, pk)
        try:
            cursors = live.parse_cursors(request.query_params.get("after"))
        except InterviewRefused as exc:
            raise exc.as_api_error() from exc
        return Response(live.live_state(interview, get_language(), cursors))


class LiveActionView(APIView):
    """``hint`` (item, text: empty on a lab releases its next built-in hint), ``time`` (minutes, item
    optional) or ``note`` (text). Each is recorded in the audit trail and shown to the candidate."""

    @extend_schema(tags=["interviews"], request=None)
    def post(self, request: Request, pk: int, action: str) -> Response:
        interview = access.interviewer_interview(request.user, pk)
        try:
            event = live.perform(interview, request.user, action, request.data)
        except InterviewRefused as exc:
            raise exc.as_api_error() from exc
        return Response(live.message_payload(event), status=status.HTTP_201_CREATED)

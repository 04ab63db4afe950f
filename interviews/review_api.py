"""Scoring over the API: the combined scorecard (the same data as the JSON export) and one's own scorecard."""

from __future__ import annotations

from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from interviews import clock, scorecard_export, scoring
from interviews.access import interviewer_interview
from interviews.errors import InterviewRefused
from interviews.models import Interview, Scorecard
from questions.models import current_lang


def _interview(request: Request, pk: int) -> Interview:
    return clock.settle(interviewer_interview(request.user, pk))


def my_scorecard_payload(scorecard: Scorecard) -> dict:
    return {
        "id": scorecard.pk,
        "interviewer": scorecard.interviewer.username,
        "recommendation": scorecard.recommendation,
        "summary": scorecard.summary,
        "submitted_at": scorecard.submitted_at,
        "points": [
            {
                "id": p.pk, "item": p.item.position + 1, "field": scoring.point_field(p), "key": p.key,
                "score": p.score, "auto": p.auto, "note": p.note, "override_reason": p.override_reason,
                "overridden_at": p.overridden_at,
            }
            for p in scoring.points_of(scorecard)
        ],
    }  # fmt: skip


class CombinedScorecardView(APIView):
    """The panel's submitted scorecards combined: visible once you submitted your own (admins always)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        interview = _interview(request, pk)
        if not scorecard_export.combined_visible(interview, request.user):
            raise PermissionDenied(
                _("Submit your own scorecard first: the panel's scores are shown once you have committed to yours.")
            )
        data, _csv = scorecard_export.export(interview, request.user, "api", current_lang())
        return Response(data)


class PointSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    score = serializers.IntegerField(min_value=0, max_value=scoring.MAX_SCORE, allow_null=True, required=False)
    note = serializers.CharField(allow_blank=True, required=False, max_length=scoring.MAX_TEXT_CHARS)
    reason = serializers.CharField(allow_blank=True, required=False, max_length=scoring.MAX_TEXT_CHARS)


class ScoresSerializer(serializers.Serializer):
    points = PointSerializer(many=True, required=False, default=list)
    recommendation = serializers.CharField(allow_blank=True, required=False)
    summary = serializers.CharField(allow_blank=True, required=False, max_length=scoring.MAX_TEXT_CHARS)
    submit = serializers.BooleanField(default=False, help_text="submit the scorecard after saving")


class MyScorecardView(APIView):
    """Your scorecard on this interview (made on first read once the interview awaits scoring)."""

    permission_classes = [IsAuthenticated]

    def _scorecard(self, request: Request, pk: int) -> Scorecard:
        try:
            return scoring.scorecard_for(_interview(request, pk), request.user)
        except InterviewRefused as exc:
            raise exc.as_api_error() from exc

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        return Response(my_scorecard_payload(self._scorecard(request, pk)))

    @extend_schema(request=ScoresSerializer, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request, pk: int) -> Response:
        scorecard = self._scorecard(request, pk)
        body = ScoresSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        points = {
            p["id"]: scoring.PointInput(
                score=p["score"] if "score" in p else scoring.UNCHANGED, note=p.get("note"), reason=p.get("reason")
            )
            for p in body.validated_data["points"]
        }
        try:
            scoring.save_scores(
                scorecard, request.user, points,
                recommendation=body.validated_data.get("recommendation"), summary=body.validated_data.get("summary"),
            )  # fmt: skip
            if body.validated_data["submit"]:
                scoring.submit(scorecard, request.user)
        except InterviewRefused as exc:
            raise exc.as_api_error() from exc
        scorecard.refresh_from_db()
        return Response(my_scorecard_payload(scorecard))

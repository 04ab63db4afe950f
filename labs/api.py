"""Lab endpoints: the catalog, attempts, runs with live output, tools, diagnosis, hints, fixes.

The workspace page uses these same endpoints, so everything a candidate can do in the
browser can be done over the API.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils.translation import get_language
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labs import services
from labs.models import Attempt, Lab, LabRun
from labs.presenters import attempt_payload, lab_payload, lab_run_payload, timeline
from sandbox import services as sandbox_services
from sandbox.api import DiagnosticSerializer, new_output


def _refused(exc: services.LabRefused, field: str = "detail") -> ValidationError:
    return ValidationError({field: [str(exc)]})


def own_attempt(request: Request, pk: int) -> Attempt:
    attempt = get_object_or_404(Attempt.objects.select_related("version__lab", "user"), pk=pk)
    if attempt.user_id != request.user.id and not request.user.is_staff:
        raise Http404
    return attempt


class LabListView(APIView):
    """Published labs."""

    permission_classes = [IsAuthenticated]

    def get(self, request: Request) -> Response:
        return Response([lab_payload(lab, get_language()) for lab in services.published_labs()])


class AttemptStartView(APIView):
    """Start an attempt on a published lab: a new seed, a rendered program."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None)
    def post(self, request: Request, slug: str) -> Response:
        lab = get_object_or_404(Lab, slug=slug)
        try:
            attempt = services.start_attempt(request.user, lab)
        except services.LabRefused as exc:
            raise _refused(exc) from exc
        return Response(attempt_payload(attempt, get_language()), status=status.HTTP_201_CREATED)


class AttemptView(APIView):
    permission_classes = [IsAuthenticated]

    def get(self, request: Request, pk: int) -> Response:
        return Response(attempt_payload(own_attempt(request, pk), get_language()))


class FilesSerializer(serializers.Serializer):
    files = serializers.DictField(child=serializers.CharField(allow_blank=True, trim_whitespace=False))
    reset = serializers.BooleanField(default=False)


class AttemptFilesView(APIView):
    """Save the working copy (``files``) or put back the original program (``reset``)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=FilesSerializer)
    def put(self, request: Request, pk: int) -> Response:
        attempt = own_attempt(request, pk)
        if request.data.get("reset"):
            services.reset_files(attempt)
        else:
            payload = FilesSerializer(data=request.data)
            payload.is_valid(raise_exception=True)
            try:
                services.save_files(attempt, payload.validated_data["files"])
            except services.LabRefused as exc:
                raise _refused(exc, "files") from exc
        return Response({"files": attempt.files})


class RunStartSerializer(serializers.Serializer):
    toggles = serializers.ListField(child=serializers.CharField(max_length=40), default=list)
    fix = serializers.BooleanField(default=False, help_text="grade the working copy as the fix")
    pause = serializers.JSONField(
        required=False,
        help_text='where a plain run stops for the tools: {"at_step": N, "on_nonfinite": true, "memory_mib": X}',
    )
    files = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        required=False,
        help_text="save these files first",
    )


class AttemptRunsView(APIView):
    permission_classes = [IsAuthenticated]

    def get(self, request: Request, pk: int) -> Response:
        attempt = own_attempt(request, pk)
        runs = attempt.lab_runs.select_related("run")[:50]
        return Response([lab_run_payload(r, get_language(), full=False) for r in runs])

    @extend_schema(request=RunStartSerializer)
    def post(self, request: Request, pk: int) -> Response:
        attempt = own_attempt(request, pk)
        payload = RunStartSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            if "files" in payload.validated_data:
                services.save_files(attempt, payload.validated_data["files"])
            lab_run = services.start_run(
                attempt,
                toggles=payload.validated_data["toggles"],
                fix=payload.validated_data["fix"],
                pause=payload.validated_data.get("pause"),
            )
        except services.LabRefused as exc:
            raise _refused(exc, "pause" if str(exc).startswith("pause") else "detail") from exc
        return Response(lab_run_payload(lab_run, get_language()), status=status.HTTP_201_CREATED)


def own_lab_run(request: Request, pk: int, run_pk: int) -> LabRun:
    attempt = own_attempt(request, pk)
    return get_object_or_404(LabRun.objects.select_related("run", "version"), attempt=attempt, pk=run_pk)


class AttemptRunView(APIView):
    """One run, followed live with ``log_after`` / ``events_after``."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[
            OpenApiParameter("log_after", int, description="log chunks after this sequence number"),
            OpenApiParameter("events_after", int, description="telemetry events after this sequence number"),
        ]
    )
    def get(self, request: Request, pk: int, run_pk: int) -> Response:
        lab_run = own_lab_run(request, pk, run_pk)
        run = lab_run.run
        return Response(
            {
                **lab_run_payload(lab_run, get_language()),
                **new_output(request, run, kinds=("metric", "memory", "cuda_memory", "rank_exit"), event_limit=3000),
                "last_event_seq": run.events.order_by("-seq").values_list("seq", flat=True).first() or 0,
                "diagnostics": DiagnosticSerializer(run.diagnostics.all(), many=True).data,
            }
        )


class AttemptRunActionView(APIView):
    """``cancel``; ``pause`` (at the next reported step), ``resume`` or ``step`` (on to the next step and
    pause again) on a plain run; or a tool while the program runs: ``stacks`` (every thread of every rank)
    or ``memory``."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None)
    def post(self, request: Request, pk: int, run_pk: int, action: str) -> Response:
        lab_run = own_lab_run(request, pk, run_pk)
        if action == "cancel":
            sandbox_services.cancel_run(lab_run.run)
            return Response(lab_run_payload(lab_run, get_language()), status=status.HTTP_202_ACCEPTED)
        if action in sandbox_services.PAUSE_CONTROLS:
            try:
                sandbox_services.control_run(lab_run.run, action)
            except sandbox_services.RunRejected as exc:
                raise ValidationError({"action": [str(exc)]}) from exc
            return Response(lab_run_payload(lab_run, get_language()), status=status.HTTP_202_ACCEPTED)
        if action not in lab_run.version.spec["tools"] or action not in ("stacks", "memory"):
            raise ValidationError({"action": [f"{action!r} is not a tool of this lab"]})
        try:
            diagnostic = sandbox_services.request_diagnostic(lab_run.run, action, request.user)
        except sandbox_services.RunRejected as exc:
            raise ValidationError({"action": [str(exc)]}) from exc
        return Response(DiagnosticSerializer(diagnostic).data, status=status.HTTP_202_ACCEPTED)


class DiagnosisSerializer(serializers.Serializer):
    root_cause = serializers.CharField(max_length=60)
    evidence = serializers.CharField(max_length=services.MAX_DIAGNOSIS_CHARS, trim_whitespace=True)


class AttemptDiagnosisView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=DiagnosisSerializer)
    def post(self, request: Request, pk: int) -> Response:
        attempt = own_attempt(request, pk)
        payload = DiagnosisSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            services.submit_diagnosis(attempt, payload.validated_data["root_cause"], payload.validated_data["evidence"])
        except services.LabRefused as exc:
            raise _refused(exc) from exc
        return Response(attempt_payload(attempt, get_language()))


class DiagnosisDraftSerializer(serializers.Serializer):
    root_cause = serializers.CharField(allow_blank=True, default="")
    evidence = serializers.CharField(allow_blank=True, trim_whitespace=False, default="")


class AttemptDiagnosisDraftView(APIView):
    """The diagnosis as it is being written: kept, never scored (the workspace autosaves it)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=DiagnosisDraftSerializer)
    def put(self, request: Request, pk: int) -> Response:
        attempt = own_attempt(request, pk)
        payload = DiagnosisDraftSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            draft = services.save_diagnosis_draft(
                attempt, payload.validated_data["root_cause"], payload.validated_data["evidence"]
            )
        except services.LabRefused as exc:
            raise _refused(exc) from exc
        return Response(draft)


class AttemptHintView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None)
    def post(self, request: Request, pk: int, index: int) -> Response:
        attempt = own_attempt(request, pk)
        if attempt.is_interview:
            raise ValidationError({"detail": ["in an interview, hints are released by your interviewer"]})
        try:
            services.reveal_hint(attempt, index)
        except services.LabRefused as exc:
            raise _refused(exc) from exc
        return Response(attempt_payload(attempt, get_language()))


class AttemptTimelineView(APIView):
    permission_classes = [IsAuthenticated]

    def get(self, request: Request, pk: int) -> Response:
        return Response(timeline(own_attempt(request, pk), get_language()))

"""Sandbox endpoints: backend status, and runs (create, follow live, cancel, diagnose, pause).

For now runs are started by authors trying programs; lab attempts (candidates)
create runs through the labs app on top of the same services.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.roles import HasRole, Role
from sandbox import services
from sandbox.models import Run, RunDiagnostic
from sandbox.selection import choose_backend

TOGGLES = {
    "FAULTLINE_DETECT_ANOMALY", "FAULTLINE_TRACEMALLOC", "FAULTLINE_FAULTHANDLER_TIMEOUT",
    "TORCH_DISTRIBUTED_DEBUG", "NCCL_DEBUG",
}  # fmt: skip


class SandboxStatusView(APIView):
    """Which sandbox backend this platform runs lab programs on, and whether it answers."""

    permission_classes = [HasRole]
    required_roles = (Role.AUTHOR,)

    @extend_schema(
        responses=inline_serializer(
            "SandboxStatus",
            {
                "backend": serializers.CharField(),
                "ok": serializers.BooleanField(),
                "isolated": serializers.BooleanField(),
                "detail": serializers.CharField(),
            },
        )
    )
    def get(self, request: Request) -> Response:
        choice = choose_backend()
        return Response(
            {"backend": choice.name, "ok": choice.ok, "isolated": choice.name == "docker", "detail": choice.detail}
        )


class RunSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        fields = [
            "id", "status", "purpose", "queue", "entry", "ranks", "env", "timeout_seconds", "memory_mb", "cpus",
            "gpu", "backend", "created_at", "started_at", "ended_at", "finished_at", "exit_code", "exit_codes",
            "timed_out", "oom_killed", "duration_seconds", "peak_memory_bytes", "error_message", "log_bytes",
            "log_truncated", "events_truncated", "cancel_requested", "control",
        ]  # fmt: skip
        read_only_fields = fields


class RunCreateSerializer(serializers.Serializer):
    files = serializers.DictField(child=serializers.CharField(allow_blank=True, trim_whitespace=False))
    entry = serializers.CharField(default="main.py", max_length=200)
    ranks = serializers.IntegerField(default=1, min_value=1, max_value=8)
    env = serializers.DictField(child=serializers.CharField(max_length=20), default=dict)
    timeout_seconds = serializers.IntegerField(default=60, min_value=5, max_value=600)
    memory_mb = serializers.IntegerField(default=1024, min_value=128, max_value=8192)
    pause = serializers.JSONField(
        required=False, help_text='where the ranks stop: {"at_step": N, "on_nonfinite": true, "memory_mib": X}'
    )

    def validate_env(self, env: dict) -> dict:
        unknown = sorted(set(env) - TOGGLES)
        if unknown:
            raise serializers.ValidationError(f"unknown toggles {unknown}; allowed: {sorted(TOGGLES)}")
        return env


class DiagnosticSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunDiagnostic
        fields = ["id", "kind", "status", "output", "created_at", "finished_at"]
        read_only_fields = ["id", "status", "output", "created_at", "finished_at"]


@extend_schema(tags=["sandbox"])
class RunViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Runs you started (staff see all). Follow one live with ``log_after`` / ``events_after``."""

    serializer_class = RunSerializer
    permission_classes = [HasRole]
    required_roles = (Role.AUTHOR,)

    def get_queryset(self):
        if self.action in ("retrieve", "artifact"):
            return services.runs_an_author_may_read(self.request.user)
        runs = Run.objects.all()
        return runs if self.request.user.is_staff else runs.filter(owner=self.request.user)

    @extend_schema(request=RunCreateSerializer, responses={201: RunSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        payload = RunCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            run = services.create_run(owner=request.user, **payload.validated_data)
        except services.RunRejected as exc:
            raise ValidationError({exc.field: [str(exc)]}) from exc
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter("log_after", int, description="return log chunks after this sequence number"),
            OpenApiParameter("events_after", int, description="return telemetry events after this sequence number"),
        ]
    )
    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        run = self.get_object()
        return Response(
            {
                **RunSerializer(run).data,
                **new_output(request, run),
                "diagnostics": DiagnosticSerializer(run.diagnostics.all(), many=True).data,
                "artifacts": list(run.artifacts.values("name", "size")),
                "paused": services.pause_state(run),
            }
        )

    @extend_schema(request=None, responses={202: RunSerializer})
    @action(detail=True, methods=["post"], url_path=r"(?P<control>pause|step|resume)")
    def control_pause(self, request: Request, pk: str | None = None, control: str = "") -> Response:
        """``pause`` at the next reported step; ``step`` on to the next one and pause again; ``resume``."""
        run = self.get_object()
        try:
            services.control_run(run, control)
        except services.RunRejected as exc:
            raise ValidationError({"action": [str(exc)]}) from exc
        run.refresh_from_db()
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses=RunSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        services.cancel_run(run)
        run.refresh_from_db()
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=DiagnosticSerializer, responses={202: DiagnosticSerializer})
    @action(detail=True, methods=["post"])
    def diagnostics(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        try:
            diagnostic = services.request_diagnostic(run, request.data.get("kind", ""), request.user)
        except services.RunRejected as exc:
            raise ValidationError({"kind": [str(exc)]}) from exc
        return Response(DiagnosticSerializer(diagnostic).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    @action(detail=True, methods=["get"], url_path=r"artifacts/(?P<name>.+)")
    def artifact(self, request: Request, pk: str | None = None, name: str = "") -> HttpResponse:
        artifact = get_object_or_404(self.get_object().artifacts, name=name)
        response = HttpResponse(bytes(artifact.content), content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{name.rsplit("/", 1)[-1]}"'
        return response


def new_output(request: Request, run: Run, kinds: tuple[str, ...] | None = None, event_limit: int = 2000) -> dict:
    """The log chunks and telemetry events a live page has not seen yet (``log_after``, ``events_after``)."""
    log_after = _non_negative(request.query_params.get("log_after"), "log_after")
    events_after = _non_negative(request.query_params.get("events_after"), "events_after")
    events = run.events.filter(seq__gt=events_after)
    if kinds is not None:
        events = events.filter(kind__in=kinds)
    return {
        "log": list(run.log_chunks.filter(seq__gt=log_after).values("seq", "text")[:200]),
        "events": list(events.values("seq", "kind", "rank", "t", "data")[:event_limit]),
    }


def _non_negative(raw, name: str) -> int:
    if raw in (None, ""):
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: ["must be a whole number"]}) from None
    if value < 0:
        raise ValidationError({name: ["must be 0 or more"]})
    return value

"""JSON endpoints the draft editor and the validation page use: save, check, validation progress, cancel.

Authors and staff only; the same services as the pages.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from authoring import lab_drafts, lab_publishing
from authoring.lab_drafts import DraftRefused, StaleDraft
from authoring.lab_views import draft_payload
from authoring.models import ValidationJob
from core.roles import HasRole, Role


class AuthorView(APIView):
    permission_classes = [HasRole]
    required_roles = (Role.AUTHOR,)


class FilesField(serializers.DictField):
    child = serializers.CharField(allow_blank=True, trim_whitespace=False)


class SaveSerializer(serializers.Serializer):
    files = FilesField()
    revision = serializers.IntegerField(min_value=1)


class CheckSerializer(serializers.Serializer):
    files = FilesField()


class DraftView(AuthorView):
    """GET the draft; PUT ``{files, revision}`` saves it, or answers 409 naming who saved since."""

    def get(self, request: Request, pk: int) -> Response:
        return Response(draft_payload(get_object_or_404(lab_drafts.live_drafts(), pk=pk)))

    @extend_schema(request=SaveSerializer)
    def put(self, request: Request, pk: int) -> Response:
        draft = get_object_or_404(lab_drafts.live_drafts(), pk=pk)
        data = SaveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            draft = lab_drafts.save_draft(
                draft, data.validated_data["files"], data.validated_data["revision"], request.user
            )
        except StaleDraft as exc:
            current = exc.draft
            return Response(
                {"error": {"status": 409, "code": "stale", "message": str(exc)}, "revision": current.revision,
                 "updated_by": current.updated_by.username, "updated_at": current.updated_at.isoformat()},
                status=status.HTTP_409_CONFLICT,
            )  # fmt: skip
        except DraftRefused as exc:
            raise ValidationError({"files": [str(exc)]}) from None
        payload = draft_payload(draft)
        payload["problems"] = [p.as_dict() for p in lab_drafts.check(draft.slug, draft.files)]
        return Response(payload)


class DraftCheckView(AuthorView):
    """Parse ``files`` (unsaved) with the loadlabs parser: the problems with file and line, none when it passes."""

    @extend_schema(request=CheckSerializer)
    def post(self, request: Request, pk: int) -> Response:
        draft = get_object_or_404(lab_drafts.live_drafts(), pk=pk)
        data = CheckSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        problems = lab_drafts.check(draft.slug, data.validated_data["files"])
        return Response({"ok": not problems, "problems": [p.as_dict() for p in problems]})


class ValidationView(AuthorView):
    def get(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(ValidationJob.objects.select_related("version__lab", "requested_by"), pk=pk)
        return Response(lab_publishing.job_payload(job))


class ValidationCancelView(AuthorView):
    @extend_schema(request=None)
    def post(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(ValidationJob.objects.select_related("version__lab", "requested_by"), pk=pk)
        lab_publishing.cancel_validation(job, request.user)
        job.refresh_from_db()
        return Response(lab_publishing.job_payload(job))

"""The question editor's live check: the form as it stands → parser messages, previews and the rubric check.

Read-only: nothing is saved. The editor page posts its form here (debounced) as the author types.
"""

from __future__ import annotations

from django.template.loader import render_to_string
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from authoring import question_editing as editing
from authoring.question_forms import fields_from_data, samples_from_data
from core.roles import HasRole, Role
from questions.calibration import calibrate_draft
from questions.models import current_lang


class QuestionCheckView(APIView):
    """Check a question form as loadbank would, without saving: ``errors`` maps an input name ("title.en",
    "rubric[2].concepts"; "" for the file as a whole) to the parser's message; ``previews`` holds the
    sanitised HTML of prompt and answer per language; ``results`` scores the reference answers and the
    ``sample`` answers against the rubric point by point (``rubric_html`` is the same, rendered);
    ``calibration_html`` is the question's calibration table against the rubric as it stands."""

    permission_classes = [HasRole]
    required_roles = (Role.AUTHOR,)
    parser_classes = [FormParser, MultiPartParser, JSONParser]

    @extend_schema(tags=["authoring"], request=None, responses={200: OpenApiResponse(description="the check")})
    def post(self, request: Request) -> Response:
        fields = fields_from_data(request.data)
        check = editing.check_fields(fields)
        results = editing.rubric_check(fields, check.spec, samples_from_data(request.data), current_lang())
        calibration = calibrate_draft(check.spec) if check.spec else None
        return Response(
            {
                "ok": check.ok,
                "file_name": str(check.path),
                "errors": check.errors,
                "warnings": check.warnings,
                "previews": editing.previews(fields),
                "results": results,
                "rubric_html": render_to_string(
                    "authoring/questions/_rubric_check.html", {"results": results}, request=request._request
                ),
                "calibration_html": render_to_string(
                    "authoring/questions/_calibration.html", {"calibration": calibration}, request=request._request
                ),
                "text": check.text,
            }
        )

"""One error body shape for every API failure:

    {"error": {"status": 400, "code": "invalid", "message": "...", "fields": {...}}}

Clients can always read ``error.message``; ``fields`` appears for validation errors.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context) -> Response | None:
    response = drf_exception_handler(exc, context)
    if response is None:
        # Unhandled errors become Django's 500 handling (logged, generic page).
        return None
    error: dict = {"status": response.status_code, "code": _code(exc), "message": _message(exc, response)}
    if isinstance(exc, exceptions.ValidationError) and isinstance(response.data, dict):
        error["fields"] = response.data
        error["message"] = _("Some fields are invalid.")
    response.data = {"error": error}
    return response


def _code(exc) -> str:
    if isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        if isinstance(codes, str):
            return codes
        return "invalid"
    return "error"


def _message(exc, response) -> str:
    if isinstance(exc, exceptions.APIException) and isinstance(exc.detail, str):
        return str(exc.detail)
    data = response.data
    if isinstance(data, dict) and isinstance(data.get("detail"), str):
        return data["detail"]
    if isinstance(data, list) and data:
        return str(data[0])
    return _("Request failed.")

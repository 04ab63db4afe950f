"""Every response under /api/ that is an error is JSON in the API's one error shape.

DRF formats the errors its views raise, but some never reach a view: a body over
DATA_UPLOAD_MAX_MEMORY_SIZE, an address with no endpoint, a CSRF refusal, a crash. Django
answers those with HTML pages, which an API client cannot read. A body that is too large is
refused before anything reads it, with the limit stated.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import translation
from django.utils.translation import gettext as _

API_PREFIX = "/api/"
CODES = {400: "bad_request", 403: "forbidden", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}


def error_response(status: int, message: str, code: str | None = None) -> JsonResponse:
    code = code or CODES.get(status, "server_error" if status >= 500 else "error")
    return JsonResponse({"error": {"status": status, "code": code, "message": message}}, status=status)


def _mib(size: int) -> str:
    return f"{size / 1048576:.1f} MiB" if size >= 1048576 else f"{size / 1024:.1f} KiB"


def too_large(length: int | None) -> JsonResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if length is None:
        message = _("The request body is larger than the limit of %(limit)s (%(bytes)s bytes).")
    else:
        message = _("The request body is %(size)s (%(length)s bytes); the limit is %(limit)s (%(bytes)s bytes).")
    values = {"limit": _mib(limit), "bytes": limit, "length": length, "size": _mib(length or 0)}
    return error_response(413, message % values)


def _default_message(status: int) -> str:
    if status == 404:
        return _("There is no API endpoint at this address.")
    if status >= 500:
        return _("The server failed to answer; the error has been logged.")
    if status == 403:
        return _("This request was refused (log in again if your session expired).")
    try:
        return HTTPStatus(status).phrase + "."
    except ValueError:
        return _("Request failed.")


class ApiJsonErrors:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_response(400, _("Content-Length is not a number."))
        if limit is not None and length > limit:
            # Refused before LocaleMiddleware runs: answer in the request's language, not the thread's last.
            with translation.override(translation.get_language_from_request(request)):
                return too_large(length)
        response = self.get_response(request)
        if response.status_code >= 400 and not _is_json(response):
            return error_response(response.status_code, _default_message(response.status_code))
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, RequestDataTooBig):
            with translation.override(translation.get_language_from_request(request)):
                return too_large(None)
        return None  # Django logs it and renders its 500, which __call__ turns into JSON


def _is_json(response: HttpResponse) -> bool:
    return response.get("Content-Type", "").startswith("application/json")

"""A sign-in made by an invitation link is good for that one interview and nothing else.

The link proves only that its holder may take the interview, so the session it opens reaches that
interview's candidate pages and API, the lab workspaces of the interview's own attempts, static
files, the language switch and logout. Anything else is refused with a page (or JSON under /api/)
that says why, instead of quietly handing a link holder the rest of the site.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _

from interviews.access import SESSION_KEY
from interviews.models import InterviewItem

# Paths a link session may use for its interview (pk) or for one of that interview's lab attempts.
INTERVIEW_PATHS = (re.compile(r"^/interviews/take/(\d+)/"), re.compile(r"^/api/interviews/take/(\d+)/"))
ATTEMPT_PATHS = (re.compile(r"^/labs/attempts/(\d+)/"), re.compile(r"^/api/labs/attempts/(\d+)/"))
# Open to any link session: a newer link for the same candidate, and the answer preview.
FREE_PATHS = (re.compile(r"^/interviews/join/[^/]+/$"), re.compile(r"^/api/interviews/preview/$"))


def interview_only_allows(path: str, interview_pk: int) -> bool:
    """Whether a session bound to ``interview_pk`` may open ``path``."""
    if path.startswith(settings.STATIC_URL) or path in (reverse("set_language"), reverse("logout")):
        return True
    if any(pattern.match(path) for pattern in FREE_PATHS):
        return True
    for pattern in INTERVIEW_PATHS:
        match = pattern.match(path)
        if match:
            return int(match.group(1)) == interview_pk
    for pattern in ATTEMPT_PATHS:
        match = pattern.match(path)
        if match:
            return InterviewItem.objects.filter(interview_id=interview_pk, attempt_id=int(match.group(1))).exists()
    return False


class InterviewOnlySession:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        bound = request.session.get(SESSION_KEY)
        if bound is None:
            return self.get_response(request)
        # The page chrome reads this to hide the site's navigation.
        request.interview_only = bound
        if interview_only_allows(request.path_info, bound):
            return self.get_response(request)
        message = _("This sign-in is for your interview only. Log out to use the rest of Faultline.")
        if request.path_info.startswith("/api/"):
            return JsonResponse({"error": {"status": 403, "code": "interview_only", "message": message}}, status=403)
        return render(
            request,
            "interviews/take/interview_only.html",
            {"message": message, "interview_url": reverse("interviews:take", args=[bound])},
            status=403,
        )

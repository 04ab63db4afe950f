"""The authors' start page: labs, questions, the sandbox, and what was done last."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from authoring.models import AuthoringEvent, LabDraft
from core.roles import Role, role_required


@role_required(Role.AUTHOR)
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "authoring/home.html",
        {
            "drafts": LabDraft.objects.filter(discarded_at__isnull=True).select_related("updated_by")[:10],
            "events": AuthoringEvent.objects.select_related("actor")[:15],
        },
    )

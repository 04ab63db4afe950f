from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from faultline.accounts import SignupForm, register_candidate
from faultline.health import run_checks


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_GET
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    results = run_checks()
    failed = [r.name for r in results if not r.ok]
    body = {
        "status": "fail" if failed else "ok",
        "failed": failed,
        "checks": {r.name: r.as_dict() for r in results},
    }
    return JsonResponse(body, status=503 if failed else 200)


def signup(request: HttpRequest) -> HttpResponse:
    if not settings.SIGNUP_ENABLED:
        return render(request, "registration/signup_closed.html", status=403)
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = register_candidate(form)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, _("Welcome to Faultline, %(name)s.") % {"name": user.username})
        return redirect("home")
    return render(request, "registration/signup.html", {"form": form})

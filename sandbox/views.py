from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from core.roles import Role, role_required
from sandbox import services
from sandbox.forms import TryProgramForm
from sandbox.models import Run
from sandbox.selection import NOT_ISOLATED_LABEL, choose_backend


@role_required(Role.AUTHOR)
def index(request: HttpRequest) -> HttpResponse:
    choice = choose_backend()
    form = TryProgramForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            run = services.create_run(
                owner=request.user,
                files={"main.py": form.cleaned_data["code"]},
                ranks=form.cleaned_data["ranks"],
                timeout_seconds=form.cleaned_data["timeout_seconds"],
            )
        except services.RunRejected as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("sandbox:run", pk=run.pk)
    return render(
        request,
        "sandbox/index.html",
        {
            "backend": choice,
            "not_isolated": choice.name == "process",
            "not_isolated_label": NOT_ISOLATED_LABEL,
            "form": form,
            "runs": Run.objects.filter(owner=request.user)[:10],
        },
    )


def _own_run(request: HttpRequest, pk: int) -> Run:
    run = get_object_or_404(Run, pk=pk)
    if run.owner_id != request.user.id and not request.user.is_staff:
        raise Http404
    return run


def _readable_run(request: HttpRequest, pk: int) -> Run:
    return get_object_or_404(services.runs_an_author_may_read(request.user), pk=pk)


@role_required(Role.AUTHOR)
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _readable_run(request, pk)
    # Cancelling and diagnostics stay with the run's owner (and staff); other authors only read.
    can_act = run.owner_id == request.user.id or request.user.is_staff
    return render(request, "sandbox/run.html", {"run": run, "can_act": can_act})


@role_required(Role.AUTHOR)
def run_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The live part of the run page, polled by htmx about once a second while the run is active."""
    run = _readable_run(request, pk)
    log = "".join(run.log_chunks.values_list("text", flat=True))
    return render(
        request,
        "sandbox/_run_live.html",
        {"run": run, "log": log, "diagnostics": run.diagnostics.all(), "artifacts": run.artifacts.only("name", "size")},
    )


@role_required(Role.AUTHOR)
@require_POST
def run_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    run = _own_run(request, pk)
    try:
        if action == "cancel":
            services.cancel_run(run)
            messages.info(request, _("Cancel requested."))
        elif action in ("stacks", "memory"):
            services.request_diagnostic(run, action, request.user)
            messages.info(request, _("Diagnostic requested; it appears below within a few seconds."))
        else:
            raise Http404
    except services.RunRejected as exc:
        messages.error(request, str(exc))
    return redirect("sandbox:run", pk=pk)

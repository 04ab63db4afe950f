from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from core.roles import Role, has_role
from labs import services
from labs.checks import localized
from labs.loader import latest_version
from labs.models import Attempt, Lab, LabRun
from labs.presenters import attempt_payload, diagnosis_feedback, file_diffs, pick, sealed_for
from labs.progress import current_stage
from labs.scoring import FORMULA
from questions.rendering import render_markdown


def briefing_html(spec: dict, language: str | None) -> str:
    # render_markdown sanitises with nh3, so the result is safe to insert as HTML.
    return mark_safe(render_markdown(pick(spec["briefing"], language)))


@login_required
def index(request: HttpRequest) -> HttpResponse:
    language = get_language()
    labs = [{"lab": lab, "title": pick(lab.current.spec["title"], language)} for lab in services.published_labs()]
    context = {
        "labs": labs,
        "attempts": services.counted_attempts().filter(user=request.user).select_related("version__lab")[:20],
    }
    if has_role(request.user, Role.AUTHOR):
        context["catalog"] = [(lab, latest_version(lab)) for lab in Lab.objects.filter(retired=False)]
    return render(request, "labs/index.html", context)


@login_required
def lab_detail(request: HttpRequest, slug: str) -> HttpResponse:
    lab = get_object_or_404(Lab, slug=slug, retired=False)
    version = lab.current
    if version is None:
        if not has_role(request.user, Role.AUTHOR):
            # Questions link here before a fresh server has proven the lab: say so instead of a bare 404.
            return render(request, "labs/unavailable.html", {"lab": lab}, status=404)
        version = latest_version(lab)
    language = get_language()
    spec = version.spec
    return render(
        request,
        "labs/lab.html",
        {
            "lab": lab,
            "version": version,
            "title": pick(spec["title"], language),
            "briefing_html": briefing_html(spec, language),
            "resources": spec["resources"],
            "questions": lab.questions.all(),
            "attempts": services.counted_attempts().filter(user=request.user, version__lab=lab),
            "is_author": has_role(request.user, Role.AUTHOR),
        },
    )


@login_required
@require_POST
def start(request: HttpRequest, slug: str) -> HttpResponse:
    lab = get_object_or_404(Lab, slug=slug)
    try:
        attempt = services.start_attempt(request.user, lab)
    except services.LabRefused as exc:
        messages.error(request, str(exc))
        return redirect("labs:lab", slug=slug)
    return redirect("labs:workspace", pk=attempt.pk)


def _own(request: HttpRequest, pk: int) -> Attempt:
    attempt = get_object_or_404(Attempt.objects.select_related("version__lab"), pk=pk)
    if attempt.user_id != request.user.id and not request.user.is_staff:
        raise Http404
    return attempt


@login_required
def workspace(request: HttpRequest, pk: int) -> HttpResponse:
    attempt = _own(request, pk)
    return render(
        request,
        "labs/workspace.html",
        {
            "attempt": attempt,
            "payload": attempt_payload(attempt, get_language()),
            # The editor's side-by-side diff compares with these in the page, without a round trip.
            "originals": services.original_files(attempt),
            "briefing_html": briefing_html(attempt.version.spec, get_language()),
            "formula": FORMULA,
            "ui": workspace_strings(),
            "back_url": back_url(request, attempt),
        },
    )


def back_url(request: HttpRequest, attempt: Attempt) -> str:
    """Where an interview attempt's "back" link leads: the page that sent the candidate here (``?back=``),
    if it is a path on this site. Labs know nothing of interviews, so the caller names the page."""
    back = request.GET.get("back", "")
    if not attempt.is_interview or not back.startswith("/"):
        return ""
    safe = url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure())
    return back if safe else ""


def workspace_strings() -> dict[str, str]:
    """Text the workspace script shows, translated here; {name} marks a value the script fills in."""
    return {
        "unsaved": _("unsaved changes"),
        "saved": _("saved"),
        "confirm_reset": _("Put back the original program? Your edits are lost."),
        "queued": _("queued ({ahead} ahead)"),
        "queued_next": _("queued (next to start)"),
        "platform_error": _("platform error, not counted against you: {error}"),
        "took": _(" in {seconds} s"),
        "first_nonfinite": _("First non-finite value ({value}) at step {step}, {rank}: marked × on the chart."),
        "steps_per_second": _("steps/s (from report times)"),
        "tool_stacks": _("stack dump"),
        "tool_memory": _("memory snapshot"),
        "tool_nonfinite": _("first non-finite loss"),
        "tool_status_pending": _("pending"),
        "tool_status_done": _("done"),
        "tool_status_failed": _("failed"),
        "nonfinite_in_layer": _("rank {rank}, step {step}, in layer {layer}"),
        "nonfinite_outside": _("rank {rank}, step {step}, outside every layer (in the loss or other code)"),
        "captured_in_program": _("captured automatically inside the program; shown to you, never graded"),
        "captured_at_deadline": _("captured automatically at the deadline"),
        "log_not_found": _("not in the log"),
        "log_line": _("line {line}"),
        "exit_codes": _(" — exit codes {codes}"),
        "diagnosis_score": _(
            "Diagnosis score {score}/100 — root cause {verdict}; evidence covers {percent}% of the rubric."
        ),
        "cause_correct": _("correct"),
        "cause_wrong": _("not supported by the evidence"),
        "reveal_hint": _("Reveal hint {n} (costs {cost} points)"),
        "hint_item": _("hint {n} (−{cost})"),
        "diagnosis_item": _("diagnosis ({score}/100)"),
        "score_line": _("fix {fix} · diagnosis {diagnosis} · hints −{hints} → {score}"),
        "best": _(" (best graded: {best})"),
        "fixed": _("Fixed"),
        "diagnosis_received": _("Diagnosis received. Your interviewers score it after the interview."),
        "diagnosis_sent": _("diagnosis sent"),
        "draft_saved": _("draft kept at {time}"),
        "scored_by_interviewers": _("Scored by your interviewers after the interview."),
        "in_progress": _("In progress"),
    }


@login_required
def diff(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "labs/_diff.html", {"diffs": file_diffs(_own(request, pk))})


@login_required
def fix_result(request: HttpRequest, pk: int, run_pk: int) -> HttpResponse:
    attempt = _own(request, pk)
    lab_run = get_object_or_404(LabRun.objects.select_related("run"), attempt=attempt, pk=run_pk, kind=LabRun.Kind.FIX)
    language = get_language()
    sealed = sealed_for(attempt)
    detail = {} if sealed else attempt.diagnosis_detail or {}
    points = diagnosis_feedback(detail, language)
    return render(
        request,
        "labs/result.html",
        {
            "attempt": attempt,
            "lab_run": lab_run,
            "run": lab_run.run,
            "title": pick(attempt.version.spec["title"], language),
            "points": points,
            "checks": [localized(check) for check in lab_run.checks],
            "stage": current_stage(lab_run),
            "diagnosis": detail,
            "sealed": sealed,
            "formula": FORMULA,
            # Static findings are for the people who review a fix, not a verdict on it.
            "show_flags": has_role(request.user, Role.INTERVIEWER) or has_role(request.user, Role.AUTHOR),
            "flags": [{"text": pick(f, language), "pattern": f["pattern"]} for f in lab_run.flags],
        },
    )

"""The interviewer's pages: dashboard, templates (loops), new interview, interview detail, live view."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.translation import get_language, ngettext
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from core.contentlang import content_language
from core.roles import Role, role_required
from interviews import access, clock, live, loops, scheduling
from interviews.errors import InterviewRefused
from interviews.forms import BLANK_ROWS, InterviewForm, TemplateForm, item_choices, item_rows, parse_items
from interviews.loops import MAX_ITEMS, MAX_TIME_BOX_MINUTES
from interviews.models import Event, Interview, InterviewTemplate, ItemKind
from labs.presenters import pick

STATUS_ORDER = [
    Interview.Status.IN_PROGRESS, Interview.Status.SCHEDULED, Interview.Status.AWAITING_SCORING,
    Interview.Status.SCORED, Interview.Status.CANCELLED,
]  # fmt: skip


def _other_area_url(page: str, pk: int) -> str:
    """Review and scorecard pages belong to another area of the app; link by name when it is wired."""
    try:
        return reverse(f"interviews:{page}", args=[pk])
    except NoReverseMatch:
        return f"/interviews/{pk}/{page}/"


@role_required(Role.INTERVIEWER)
def index(request: HttpRequest) -> HttpResponse:
    interviews = list(
        access.interviews_for_interviewer(request.user).select_related("owner").prefetch_related("co_interviewers")
    )
    groups = []
    for status in STATUS_ORDER:
        rows = [i for i in interviews if i.status == status]
        for interview in rows:
            interview.review_url = _other_area_url("review", interview.pk)
            interview.scorecard_url = _other_area_url("scorecard", interview.pk)
        if rows:
            groups.append({"status": status, "label": Interview.Status(status).label, "interviews": rows})
    templates = access.templates_for(request.user).select_related("owner")[:50]
    return render(request, "interviews/index.html", {"groups": groups, "templates": templates})


# ---- templates (loops) ------------------------------------------------------------------


@role_required(Role.INTERVIEWER)
def template_list(request: HttpRequest) -> HttpResponse:
    templates = access.templates_for(request.user).select_related("owner").prefetch_related("items")
    return render(request, "interviews/manage/template_list.html", {"templates": templates})


def _items_context(rows: list[dict], item_errors: list[str]) -> dict:
    return {
        "rows": rows + [{"ref": "", "box": ""}] * BLANK_ROWS,
        "item_errors": item_errors,
        "choices": item_choices(get_language()),
        "max_items": MAX_ITEMS,
        "max_box": MAX_TIME_BOX_MINUTES,
    }


def _refusal(form, item_errors: list[str], exc: InterviewRefused) -> None:
    """Put a service's refusal next to the field it names."""
    if exc.field == "items":
        item_errors.append(str(exc))
    elif exc.field in form.fields:
        form.add_error(exc.field, str(exc))
    else:
        form.add_error(None, str(exc))


def _template_form(request: HttpRequest, template: InterviewTemplate | None) -> HttpResponse:
    if request.method == "POST":
        form = TemplateForm(request.POST)
        specs, rows, item_errors = parse_items(request.POST)
        if form.is_valid() and not item_errors:
            try:
                saved = loops.save_template(
                    request.user, title=form.cleaned_data["title"], instructions=form.cleaned_data["instructions"],
                    duration_minutes=form.cleaned_data["duration_minutes"], items=specs, template=template,
                )  # fmt: skip
            except InterviewRefused as exc:
                _refusal(form, item_errors, exc)
            else:
                messages.success(request, _("Template saved."))
                return redirect("interviews:template", saved.pk)
        status = 400
    else:
        status = 200
        if template is None:
            form, rows = TemplateForm(), []
        else:
            form = TemplateForm(initial={
                "title": template.title, "instructions": template.instructions,
                "duration_minutes": template.duration_minutes,
            })  # fmt: skip
            rows = item_rows(loops.template_item_specs(template))
        item_errors = []
    context = {"form": form, "template": template, **_items_context(rows, item_errors)}
    return render(request, "interviews/manage/template_form.html", context, status=status)


@role_required(Role.INTERVIEWER)
def template_create(request: HttpRequest) -> HttpResponse:
    return _template_form(request, None)


@role_required(Role.INTERVIEWER)
def template_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _template_form(request, access.editable_template(request.user, pk))


@role_required(Role.INTERVIEWER)
def template_detail(request: HttpRequest, pk: int) -> HttpResponse:
    template = access.templates_for(request.user).select_related("owner", "copied_from").filter(pk=pk).first()
    if template is None:
        raise Http404
    items = template.items.select_related("question", "lab__current")
    language = get_language()
    rows = []
    for item in items:
        if item.kind == ItemKind.QUESTION:
            title = item.question.localized("title", content_language(language))
        else:
            title = pick(item.lab.current.spec["title"], language) if item.lab.current else item.lab.slug
        rows.append({"item": item, "title": title})
    return render(
        request,
        "interviews/manage/template_detail.html",
        {"template": template, "rows": rows, "can_edit": request.user.is_staff or template.owner_id == request.user.pk},
    )


@require_POST
@role_required(Role.INTERVIEWER)
def template_copy(request: HttpRequest, pk: int) -> HttpResponse:
    template = access.templates_for(request.user).filter(pk=pk).first()
    if template is None:
        raise Http404
    copy = loops.copy_template(request.user, template)
    messages.success(request, _("Copied. This copy is yours to edit."))
    return redirect("interviews:template-edit", copy.pk)


# ---- new interview and its detail -------------------------------------------------------


def _window_defaults() -> dict:
    now = timezone.now().replace(second=0, microsecond=0)
    return {"window_opens_at": now, "window_closes_at": now + timedelta(days=7)}


@role_required(Role.INTERVIEWER)
def interview_create(request: HttpRequest) -> HttpResponse:
    source = request.POST.get("template") if request.method == "POST" else request.GET.get("template")
    template = None
    if source:
        template = access.templates_for(request.user).filter(pk=int(source) if source.isdigit() else 0).first()
    if request.method == "POST":
        form = InterviewForm(request.POST)
        specs, rows, item_errors = parse_items(request.POST)
        if form.is_valid() and not item_errors:
            data = form.cleaned_data
            account = data["candidate_account"]
            candidate = (
                scheduling.CandidateSpec(user=account)
                if account is not None
                else scheduling.CandidateSpec(name=data["candidate_name"], email=data["candidate_email"])
            )
            try:
                interview = scheduling.create_interview(
                    request.user, title=data["title"], items=specs, candidate=candidate,
                    window_opens_at=data["window_opens_at"], window_closes_at=data["window_closes_at"],
                    duration_minutes=data["duration_minutes"], instructions=data["instructions"],
                    co_interviewers=data["co_interviewers"], template=template,
                )  # fmt: skip
            except InterviewRefused as exc:
                if exc.field == "candidate":
                    exc.field = "candidate_account"
                _refusal(form, item_errors, exc)
            else:
                messages.success(request, _("Interview created. Invite the candidate when you are ready."))
                return redirect("interviews:detail", interview.pk)
        status = 400
    else:
        status = 200
        initial = _window_defaults()
        rows = []
        if template is not None:
            initial.update(title=template.title, instructions=template.instructions,
                           duration_minutes=template.duration_minutes)  # fmt: skip
            rows = item_rows(loops.template_item_specs(template))
        form = InterviewForm(initial=initial)
        item_errors = []
    context = {"form": form, "source_template": template, **_items_context(rows, item_errors)}
    return render(request, "interviews/manage/interview_form.html", context, status=status)


def describe_event(event: Event) -> str:
    """One line of the audit trail, for a person."""
    detail = event.detail or {}
    kind = Event.Kind
    if event.kind in (kind.HINT_RELEASED,):
        if "lab_hint" in detail:
            return _("built-in hint %(n)d released (costs %(cost)s points)") % {
                "n": detail["lab_hint"] + 1, "cost": detail.get("cost", "?"),
            }  # fmt: skip
        return _("hint: %(text)s") % {"text": detail.get("text", "")}
    if event.kind == kind.NOTE_SENT:
        return _("note: %(text)s") % {"text": detail.get("text", "")}
    if event.kind == kind.TIME_ADDED:
        minutes = int(detail.get("seconds", 0)) // 60
        return ngettext("%(minutes)d minute added", "%(minutes)d minutes added", minutes) % {"minutes": minutes}
    if event.kind == kind.INVITED:
        return _("invitation sent to %(email)s") % {"email": detail.get("email", "")}
    if event.kind == kind.LAB_SCORED:
        if detail.get("reason") == "fix":
            return _("fix graded: %(percent)s%% of the checks pass") % {"percent": detail.get("fix_percent", "?")}
        if detail.get("reason") == "diagnosis":
            return _("diagnosis submitted (%(cause)s), scored %(score)s/100") % {
                "cause": detail.get("root_cause", ""), "score": detail.get("score", "?"),
            }  # fmt: skip
    if event.kind in (kind.ITEM_ANSWERED, kind.ITEM_TIME_UP) and "characters" in detail:
        return _("%(characters)d characters kept") % {"characters": detail["characters"]}
    if event.kind == kind.FINISHED:
        return _("by the candidate") if detail.get("reason") == "candidate" else _("time ran out")
    return ""


def _interview_context(request: HttpRequest, interview: Interview) -> dict:
    language = get_language()
    items = []
    for item in interview.items.select_related("question", "lab_version").order_by("position"):
        items.append({"item": item, "title": live.item_title(item, language), "state": live.item_state(item)})
    events = [
        {"event": e, "text": describe_event(e)}
        for e in interview.events.select_related("actor", "item").order_by("created_at", "pk")
    ]
    return {
        "interview": interview,
        "items": items,
        "panel": [interview.owner, *interview.co_interviewers.all()],
        "invitations": list(interview.invitations.select_related("created_by")),
        "events": events,
        "can_invite": interview.status in (Interview.Status.SCHEDULED, Interview.Status.IN_PROGRESS),
        "review_url": _other_area_url("review", interview.pk),
        "scorecard_url": _other_area_url("scorecard", interview.pk),
    }


@role_required(Role.INTERVIEWER)
def interview_detail(request: HttpRequest, pk: int) -> HttpResponse:
    interview = clock.settle(access.interviewer_interview(request.user, pk))
    return render(request, "interviews/manage/interview_detail.html", _interview_context(request, interview))


@require_POST
@role_required(Role.INTERVIEWER)
def invite(request: HttpRequest, pk: int) -> HttpResponse:
    interview = access.interviewer_interview(request.user, pk)
    try:
        invitation, url = scheduling.invite(interview, request.user, request.build_absolute_uri("/"))
    except InterviewRefused as exc:
        messages.error(request, str(exc))
        return redirect("interviews:detail", interview.pk)
    # The link is shown in this response only: only its hash is stored, so it cannot be shown again.
    context = {**_interview_context(request, interview), "new_link": url, "new_invitation": invitation}
    return render(request, "interviews/manage/interview_detail.html", context)


@require_POST
@role_required(Role.INTERVIEWER)
def revoke(request: HttpRequest, pk: int, invitation_pk: int) -> HttpResponse:
    interview = access.interviewer_interview(request.user, pk)
    invitation = interview.invitations.filter(pk=invitation_pk).first()
    if invitation is None:
        raise Http404
    if scheduling.revoke(invitation, request.user):
        messages.success(request, _("The link was withdrawn: it no longer signs anyone in."))
    else:
        messages.error(request, _("This link was already used, withdrawn or had expired."))
    return redirect("interviews:detail", interview.pk)


# ---- live view -----------------------------------------------------------------------------


def live_strings() -> dict[str, str]:
    """Text the live script shows, translated here; {name} marks a value the script fills in."""
    return {
        "not_started": _("not started"),
        "time_left": _("{time} left"),
        "box_left": _("time box: {time} left"),
        "box_total": _("time box: {time}"),
        "no_draft": _("No answer typed yet."),
        "saved_at": _("saved {time}"),
        "not_opened_lab": _("The candidate has not opened this lab yet (variant {seed})."),
        "no_runs": _("No runs yet."),
        "run": _("run #{id}"),
        "fix": _("fix #{id}"),
        "follow": _("Show log"),
        "following": _("showing"),
        "no_diagnosis": _("No diagnosis submitted yet."),
        "diagnosis_draft": _("Draft, kept at {time} — root cause: {cause}"),
        "diagnosis": _("{cause} — score {score}/100"),
        "fix_result": _("fix #{id}: {percent}% of the checks pass, score {score}"),
        "check_pass": _("pass"),
        "check_fail": _("fail"),
        "hint_released": _("released"),
        "hint_not_released": _("not released"),
        "score": _("fix {fix} · diagnosis {diagnosis} · hints −{hints} → {score}"),
        "tool": _("{tool} on run #{run}"),
        "hint_item": _("hint {n} (−{cost})"),
        "diagnosis_item": _("diagnosis ({score}/100)"),
        "no_messages": _("Nothing sent to the candidate yet."),
        "minutes_added": _("{minutes} minutes added"),
        "sent": _("Sent."),
        "offline": _("Connection lost: retrying…"),
        "updated": _("updated {time}"),
    }


@role_required(Role.INTERVIEWER)
def live_page(request: HttpRequest, pk: int) -> HttpResponse:
    interview = access.interviewer_interview(request.user, pk)
    state = live.live_state(interview, get_language())
    return render(
        request,
        "interviews/manage/live.html",
        {"interview": interview, "state": state, "ui": live_strings(), "poll_ms": 1000},
    )


@require_POST
@role_required(Role.INTERVIEWER)
def live_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    """The live page's forms without the script: same service, then back to the page."""
    interview = access.interviewer_interview(request.user, pk)
    try:
        live.perform(interview, request.user, action, request.POST)
    except InterviewRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Sent."))
    return redirect("interviews:live", interview.pk)

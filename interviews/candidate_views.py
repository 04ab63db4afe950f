"""The candidate's pages: the invitation link, the interview page, one page per item.

Every page works without JavaScript (plain forms); ``static/js/interview-take.js`` adds the live
countdowns, the interviewers' messages, autosave and the Markdown preview through the candidate API.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from interviews import access, scheduling, taking
from interviews.candidate_api import (
    candidate_item,
    interview_state,
    item_seconds_left,
    item_title,
    kept_answer,
    settled_interview,
)
from interviews.errors import InterviewRefused
from interviews.models import Interview, ItemKind
from questions.models import current_lang


def join(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link. Opening it (GET) only shows what it is for: mail scanners and chat previews fetch
    links, and a single-use link must not be spent by them. The candidate's press of the button (POST)
    spends it and signs them in to that one interview."""
    try:
        if request.method != "POST":
            invitation = scheduling.live_invitation(token)
            return render(request, "interviews/take/join.html", {"interview": invitation.interview})
        interview = scheduling.redeem(token)
    except InterviewRefused as exc:
        return render(request, "interviews/take/link_refused.html", {"reason": str(exc)}, status=410)
    # login() cycles the session key, so a session fixed before the link was opened is worthless.
    login(request, interview.candidate, backend=settings.AUTHENTICATION_BACKENDS[0])
    request.session[access.SESSION_KEY] = interview.pk
    return redirect("interviews:take", pk=interview.pk)


def ui_strings() -> dict[str, str]:
    """Text the interview script shows, translated here; {name} marks a value the script fills in."""
    return {
        "unsaved": _("unsaved changes"),
        "saving": _("saving…"),
        "saved_at": _("saved at {time}"),
        "save_failed": _("not saved: {error}"),
        "offline": _("not saved: the server cannot be reached; your text stays here and is retried"),
        "time_up": _("time is up"),
        "preview_empty": _("Nothing to preview yet."),
        "preview_failed": _("The preview failed: {error}"),
        "item": _("item {n}"),
        "no_messages": _("No messages from your interviewers yet."),
        "confirm_finish": _("Finish the interview now? Your answers as saved are handed in and cannot be changed."),
        "confirm_done": _("Hand in this item now? You cannot change it afterwards."),
    }


def _take_context(request: HttpRequest, interview: Interview, **extra) -> dict:
    return {
        "interview": interview,
        "state": interview_state(interview),
        "ui": ui_strings(),
        "api": reverse("api-interview-take", args=[interview.pk]),
        "preview_api": reverse("api-interview-preview"),
        **extra,
    }


def take(request: HttpRequest, pk: int) -> HttpResponse:
    interview = settled_interview(request, pk)
    if interview.status == Interview.Status.SCHEDULED:
        template = "interviews/take/before.html"
    elif interview.status == Interview.Status.IN_PROGRESS:
        template = "interviews/take/interview.html"
    else:
        template = "interviews/take/after.html"
    return render(request, template, _take_context(request, interview))


@require_POST
def start(request: HttpRequest, pk: int) -> HttpResponse:
    interview = access.candidate_interview(request, pk)
    try:
        taking.start(interview)
    except InterviewRefused as exc:
        messages.error(request, str(exc))
    return redirect("interviews:take", pk=pk)


@require_POST
def finish(request: HttpRequest, pk: int) -> HttpResponse:
    interview = access.candidate_interview(request, pk)
    try:
        taking.finish_early(interview)
    except InterviewRefused as exc:
        messages.error(request, str(exc))
    return redirect("interviews:take", pk=pk)


def item_page(request: HttpRequest, pk: int, item_pk: int) -> HttpResponse:
    interview = settled_interview(request, pk)
    if interview.status == Interview.Status.SCHEDULED:
        return redirect("interviews:take", pk=pk)
    item = candidate_item(interview, item_pk)
    lang = current_lang()
    context = _take_context(
        request,
        interview,
        item=item,
        title=item_title(item, lang),
        lang=lang,
        item_seconds_left=item_seconds_left(item),
        answer=kept_answer(item) if item.kind == ItemKind.QUESTION else "",
        editable=interview.answerable and item.opened_at is not None and item.closed_at is None,
        editable_later=interview.answerable and item.closed_at is None,
        # Seeing the prompt is what starts an item's time box, so it is shown only once opened.
        show_prompt=item.opened_at is not None,
        time_box_minutes=-(-(item.time_box_seconds + item.extra_seconds) // 60) if item.time_box_seconds else None,
    )
    if item.kind == ItemKind.QUESTION:
        context["prompt_html"] = item.question.localized("prompt_html", lang)
    return render(request, "interviews/take/item.html", context)


@require_POST
def open_item(request: HttpRequest, pk: int, item_pk: int) -> HttpResponse:
    interview = access.candidate_interview(request, pk)
    item = candidate_item(interview, item_pk)
    try:
        item = taking.open_item(item)
    except InterviewRefused as exc:
        messages.error(request, str(exc))
        return redirect("interviews:take-item", pk=pk, item_pk=item_pk)
    if item.kind == ItemKind.LAB and item.attempt_id:
        back = urlencode({"back": reverse("interviews:take", args=[pk])})
        return redirect(f"{reverse('labs:workspace', args=[item.attempt_id])}?{back}")
    return redirect("interviews:take-item", pk=pk, item_pk=item_pk)


def _save_posted(request: HttpRequest, item) -> bool:
    """Keep the text a plain form posted (no JavaScript, or a last save racing the button)."""
    if "text" not in request.POST or item.kind != ItemKind.QUESTION:
        return True
    try:
        taking.autosave(item, request.POST["text"])
    except InterviewRefused as exc:
        messages.error(request, str(exc))
        return False
    return True


@require_POST
def save_item(request: HttpRequest, pk: int, item_pk: int) -> HttpResponse:
    interview = access.candidate_interview(request, pk)
    item = candidate_item(interview, item_pk)
    if _save_posted(request, item):
        messages.success(request, _("Your answer is saved."))
    return redirect("interviews:take-item", pk=pk, item_pk=item_pk)


@require_POST
def done_item(request: HttpRequest, pk: int, item_pk: int) -> HttpResponse:
    interview = access.candidate_interview(request, pk)
    item = candidate_item(interview, item_pk)
    if not _save_posted(request, item):
        return redirect("interviews:take-item", pk=pk, item_pk=item_pk)
    try:
        taking.submit_item(item)
    except InterviewRefused as exc:
        messages.error(request, str(exc))
        return redirect("interviews:take-item", pk=pk, item_pk=item_pk)
    messages.success(request, _("Item %(n)d is handed in.") % {"n": item.position + 1})
    return redirect("interviews:take", pk=pk)

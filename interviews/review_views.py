"""After the session: replay the candidate's work, score it, and read the panel's combined scorecard.

Only the interview's interviewers and admins reach these pages (anyone else gets 404); candidates never.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from interviews import clock, playback, scorecard_export, scoring
from interviews.access import interviewer_interview
from interviews.errors import InterviewRefused
from interviews.models import Interview, Scorecard
from questions.models import current_lang

EXPORT_FORMATS = ("json", "csv")


def _interview(request: HttpRequest, pk: int) -> Interview:
    return clock.settle(interviewer_interview(request.user, pk))


def review_strings() -> dict[str, str]:
    """Text the review script shows, translated here; {name} marks a value the script fills in."""
    return {
        "step": _("Step {index} of {count}"),
        "no_draft": _("No draft yet at this moment."),
        "no_run": _("No run yet at this moment."),
        "no_diagnosis": _("No diagnosis yet at this moment."),
        "draft_chars": _("{count} characters"),
        "diff_from_original": _("Code changes since the original program"),
        "diff_from_run": _("Code changes since the previous run"),
        "no_changes": _("No code changes since the previous run."),
        "flags": _("Static review flags"),
        "diagnosis_score": _("root cause {cause} · score {score}/100"),
        "tool_output": _("Tool output ({tool}, {status})"),
        "messages": _("Hints, notes and time so far"),
        "none_yet": _("None yet."),
        "fix_percent": _("fix {percent}%"),
        "question": _("Question"),
        "lab": _("Lab"),
    }


@login_required
def review(request: HttpRequest, pk: int) -> HttpResponse:
    interview = _interview(request, pk)
    lang = current_lang()
    data = playback.playback(interview, lang)
    return render(
        request,
        "interviews/review/review.html",
        {
            "interview": interview,
            "data": data,
            "ui": review_strings(),
            "scoring_open": scoring.scoring_open(interview),
            "started": interview.started_at is not None,
        },
    )


def _point_inputs(post, points) -> dict[int, scoring.PointInput]:
    sent = {}
    for point in points:
        if f"score-{point.pk}" not in post:
            continue
        sent[point.pk] = scoring.PointInput(
            score=post.get(f"score-{point.pk}", ""),
            note=post.get(f"note-{point.pk}", ""),
            reason=post.get(f"reason-{point.pk}", ""),
        )
    return sent


@login_required
def score(request: HttpRequest, pk: int) -> HttpResponse:
    interview = _interview(request, pk)
    context: dict = {"interview": interview, "recommendations": Scorecard.Recommendation.choices}
    if not scoring.scoring_open(interview):
        return render(request, "interviews/review/score.html", {**context, "closed": True})
    scorecard = scoring.scorecard_for(interview, request.user)
    error, posted = None, None
    if request.method == "POST":
        posted = request.POST
        try:
            scoring.save_scores(
                scorecard, request.user, _point_inputs(posted, scoring.points_of(scorecard)),
                recommendation=posted.get("recommendation", ""), summary=posted.get("summary", ""),
            )  # fmt: skip
            if posted.get("action") == "submit":
                scoring.submit(scorecard, request.user)
                messages.success(request, _("Your scorecard is submitted."))
            else:
                messages.success(request, _("Scores saved."))
            return redirect("interviews:score", pk=interview.pk)
        except InterviewRefused as exc:
            error = exc
    scorecard.refresh_from_db()
    context.update(
        scorecard=scorecard,
        read_only=scorecard.submitted_at is not None,
        rows=scoring.sheet(scorecard, current_lang(), posted, error.field if error else ""),
        error=error,
        recommendation=posted.get("recommendation", scorecard.recommendation) if posted else scorecard.recommendation,
        summary=posted.get("summary", scorecard.summary) if posted else scorecard.summary,
        combined_visible=scorecard_export.combined_visible(interview, request.user),
    )
    return render(request, "interviews/review/score.html", context, status=400 if error else 200)


@login_required
def scorecard(request: HttpRequest, pk: int) -> HttpResponse:
    interview = _interview(request, pk)
    visible = scorecard_export.combined_visible(interview, request.user)
    context = {"interview": interview, "visible": visible, "scoring_open": scoring.scoring_open(interview)}
    if visible:
        data = scorecard_export.build_scorecard(interview, current_lang())
        context.update(
            data=data,
            chart={
                "labels": [row["topic"] for row in data["topics"]],
                "series": [
                    {
                        "label": person["username"],
                        "data": [row["scores"].get(person["username"]) for row in data["topics"]],
                    }
                    for person in data["interviewers"]
                ],
                "mean": [row["mean"] for row in data["topics"]],
                "mean_label": _("Mean"),
                "axis": _("Score (0–4)"),
            },
        )
    return render(request, "interviews/review/scorecard.html", context)


@login_required
def scorecard_download(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    if fmt not in EXPORT_FORMATS:
        raise Http404
    interview = _interview(request, pk)
    if not scorecard_export.combined_visible(interview, request.user):
        return HttpResponse(
            _("Submit your own scorecard first: the panel's scores are shown once you have committed to yours."),
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    data, text = scorecard_export.export(interview, request.user, fmt, current_lang())
    if fmt == "csv":
        response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(
            json.dumps(data, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2),
            content_type="application/json; charset=utf-8",
        )
    response["Content-Disposition"] = f'attachment; filename="interview-{interview.pk}-scorecard.{fmt}"'
    return response

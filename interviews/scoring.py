"""Each interviewer's scorecard: 0–4 per rubric point (questions) or per auto-graded part (labs).

A lab's points start at what the platform measured; moving one away from that is an override and
needs a written reason, kept with who and when. A scorecard is the interviewer's own until they
submit it; once everyone on the panel has submitted, the interview is scored.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _

from interviews.audit import record
from interviews.errors import InterviewRefused
from interviews.models import Event, Interview, InterviewItem, ItemKind, PointScore, Scorecard
from labs.checks import localized
from labs.models import Attempt, LabRun
from labs.presenters import diagnosis_feedback
from questions.feedback import feedback_points
from questions.models import current_lang
from questions.rendering import render_markdown

MAX_SCORE = 4
FIX_KEY = "fix"
DIAGNOSIS_KEY = "diagnosis"
LAB_KEYS = (FIX_KEY, DIAGNOSIS_KEY)
MAX_TEXT_CHARS = 5000
SCORING_STATUSES = (Interview.Status.AWAITING_SCORING, Interview.Status.SCORED)


def scoring_open(interview: Interview) -> bool:
    return interview.status in SCORING_STATUSES


def panel_ids(interview: Interview) -> set[int]:
    """The interviewers whose scorecards the interview waits for: the owner and the co-interviewers.
    An admin may score too, but the interview does not wait for them."""
    return {interview.owner_id, *interview.co_interviewers.values_list("pk", flat=True)}


def percent_to_score(percent: int | None) -> int:
    """A 0–100 measurement on the 0–4 scale."""
    return min(MAX_SCORE, max(0, round((percent or 0) / 25)))


def best_fix(attempt: Attempt | None) -> LabRun | None:
    if attempt is None:
        return None
    return (
        attempt.lab_runs.filter(kind=LabRun.Kind.FIX, graded_at__isnull=False)
        .select_related("run")
        .order_by("-fix_percent", "-created_at")
        .first()
    )


def lab_autos(item: InterviewItem) -> dict[str, int]:
    attempt = item.attempt
    fix = best_fix(attempt)
    return {
        FIX_KEY: percent_to_score(fix.fix_percent if fix else 0),
        DIAGNOSIS_KEY: percent_to_score(attempt.diagnosis_score if attempt else 0),
    }


def _ensure_points(scorecard: Scorecard, item: InterviewItem) -> None:
    if scorecard.submitted_at is not None:
        return  # what was submitted stays exactly as it was, even if a rubric changes later
    existing = {p.key: p for p in PointScore.objects.filter(scorecard=scorecard, item=item)}
    if item.kind == ItemKind.QUESTION:
        missing = [p.key for p in item.question.rubric.all() if p.key not in existing]
        PointScore.objects.bulk_create(
            [PointScore(scorecard=scorecard, item=item, key=key) for key in missing], ignore_conflicts=True
        )
        return
    autos = lab_autos(item)
    PointScore.objects.bulk_create(
        [
            PointScore(scorecard=scorecard, item=item, key=k, auto=v, score=v)
            for k, v in autos.items()
            if k not in existing
        ],
        ignore_conflicts=True,
    )
    # A fix graded after the scorecard was first opened moves the measurement; a score the interviewer
    # did not override follows it, an override stays as written.
    for key, point in existing.items():
        if key in autos and point.auto != autos[key]:
            fields = {"auto": autos[key]}
            if point.score == point.auto:
                fields["score"] = autos[key]
            elif point.score == autos[key]:
                fields.update(override_reason="", overridden_at=None)
            PointScore.objects.filter(pk=point.pk).update(**fields)


def _refuse_unless_open(interview: Interview) -> None:
    if not scoring_open(interview):
        raise InterviewRefused(_("Scoring opens once the interview is over (it is awaiting scoring)."))


@transaction.atomic
def scorecard_for(interview: Interview, user) -> Scorecard:
    """The user's scorecard on this interview, made on first open with one point per rubric point or lab part."""
    _refuse_unless_open(interview)
    scorecard, _created = Scorecard.objects.get_or_create(interview=interview, interviewer=user)
    for item in interview.items.select_related("question", "lab", "attempt"):
        _ensure_points(scorecard, item)
    return scorecard


def points_of(scorecard: Scorecard) -> list[PointScore]:
    return list(scorecard.points.select_related("item"))


UNCHANGED = object()


@dataclass
class PointInput:
    """What the form or the API sent for one point. ``score`` None or "" clears it; UNCHANGED (and None for
    the texts) leaves the field as it is."""

    score: object = UNCHANGED
    note: str | None = None
    reason: str | None = None


def _parse_score(value, field: str) -> int | None:
    if value is None or value == "":
        return None
    refusal = InterviewRefused(_("%(field)s: a whole number from 0 to 4") % {"field": field}, field)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise refusal
    text = str(value).strip()
    if not text.isdigit() or not 0 <= int(text) <= MAX_SCORE:
        raise refusal
    return int(text)


def _text(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InterviewRefused(_("%(field)s: text") % {"field": field}, field)
    value = value.strip()
    if len(value) > MAX_TEXT_CHARS:
        raise InterviewRefused(
            _("%(field)s: at most %(limit)s characters") % {"field": field, "limit": MAX_TEXT_CHARS}, field
        )
    return value


def point_field(point: PointScore) -> str:
    """How forms and API errors name a point: the item's number and the point's key."""
    return f"item{point.item.position + 1}.{point.key}"


def _editable(scorecard: Scorecard, by) -> Scorecard:
    scorecard.refresh_from_db()
    if scorecard.interviewer_id != by.pk:
        raise InterviewRefused(_("This is another interviewer's scorecard."))
    if scorecard.submitted_at is not None:
        raise InterviewRefused(_("This scorecard is submitted and can no longer change."))
    scorecard.interview.refresh_from_db()
    _refuse_unless_open(scorecard.interview)
    return scorecard


@transaction.atomic
def save_scores(
    scorecard: Scorecard,
    by,
    points: dict[int, PointInput],
    recommendation: str | None = None,
    summary: str | None = None,
) -> Scorecard:
    """Save scores, notes, overrides, the recommendation and the summary; all or nothing.

    ``points`` maps a PointScore pk to what was sent for it. A score that differs from the measured
    ``auto`` needs a reason; each new or changed override is recorded with who, from, to and why."""
    scorecard = _editable(Scorecard.objects.select_for_update().get(pk=scorecard.pk), by)
    by_pk = {p.pk: p for p in points_of(scorecard)}
    unknown = sorted(set(points) - set(by_pk))
    if unknown:
        raise InterviewRefused(_("points: %(ids)s are not points of this scorecard") % {"ids": unknown}, "points")
    if recommendation is not None and recommendation not in {"", *Scorecard.Recommendation.values}:
        choices = ", ".join(Scorecard.Recommendation.values)
        raise InterviewRefused(_("recommendation: one of %(choices)s") % {"choices": choices}, "recommendation")
    summary = _text(summary, "summary")
    now = timezone.now()
    overrides = []
    for pk, sent in points.items():
        point = by_pk[pk]
        field = point_field(point)
        score = point.score if sent.score is UNCHANGED else _parse_score(sent.score, field)
        note = _text(sent.note, f"{field}.note")
        reason = _text(sent.reason, f"{field}.reason")
        reason = point.override_reason if reason is None else reason
        before = point.score
        if point.auto is not None and score is not None and score != point.auto:
            if not reason:
                raise InterviewRefused(
                    _(
                        "%(field)s: you changed the measured score %(auto)s to %(score)s: write the reason "
                        "for the override"
                    )
                    % {"field": field, "auto": point.auto, "score": score},
                    f"{field}.reason",
                )
            if score != before or reason != point.override_reason:
                overrides.append((point, before, score, reason))
                point.overridden_at = now
            point.override_reason = reason
        else:
            # At the measured score, or nothing was measured: there is no override to explain.
            point.override_reason, point.overridden_at = "", None
        point.score = score
        if note is not None:
            point.note = note
        point.save(update_fields=["score", "note", "override_reason", "overridden_at", "updated_at"])
    fields = ["updated_at"]
    if recommendation is not None:
        scorecard.recommendation = recommendation
        fields.append("recommendation")
    if summary is not None:
        scorecard.summary = summary
        fields.append("summary")
    scorecard.save(update_fields=fields)
    interview = scorecard.interview
    for point, before, after, reason in overrides:
        record(interview, Event.Kind.OVERRIDDEN, by, point.item, key=point.key, auto=point.auto,
               **{"from": before, "to": after}, reason=reason)  # fmt: skip
    record(interview, Event.Kind.SCORED, by, scorecard=scorecard.pk, points=len(points))
    return scorecard


def missing_for_submit(scorecard: Scorecard) -> list[str]:
    """What still stops the scorecard from being submitted, as field names."""
    missing = [point_field(p) for p in points_of(scorecard) if p.score is None]
    if not scorecard.recommendation:
        missing.append("recommendation")
    if not scorecard.summary.strip():
        missing.append("summary")
    return missing


@transaction.atomic
def submit(scorecard: Scorecard, by) -> Scorecard:
    """Submit once everything is filled in; the scorecard is read-only after. The last of the panel to
    submit moves the interview to scored."""
    scorecard = _editable(Scorecard.objects.select_for_update().get(pk=scorecard.pk), by)
    missing = missing_for_submit(scorecard)
    if missing:
        raise InterviewRefused(_("Before submitting, fill in: %(fields)s") % {"fields": ", ".join(missing)}, missing[0])
    if not Scorecard.submit(scorecard.pk):
        raise InterviewRefused(_("This scorecard is submitted and can no longer change."))
    interview = scorecard.interview
    record(interview, Event.Kind.SUBMITTED, by, scorecard=scorecard.pk, recommendation=scorecard.recommendation)
    submitted = set(
        Scorecard.objects.filter(interview=interview, submitted_at__isnull=False).values_list("interviewer", flat=True)
    )
    if panel_ids(interview) <= submitted:
        Interview.objects.filter(pk=interview.pk, status=Interview.Status.AWAITING_SCORING).update(
            status=Interview.Status.SCORED
        )
    scorecard.refresh_from_db()
    return scorecard


# What the scoring page shows next to the points.


def item_title(item: InterviewItem, lang: str | None = None) -> str:
    lang = lang or current_lang()
    if item.kind == ItemKind.QUESTION:
        return item.question.localized("title", lang)
    spec = (item.lab_version or item.lab.current).spec
    return spec["title"]["zh" if lang == "zh" else "en"]


def point_label(item: InterviewItem, key: str, lang: str | None = None) -> str:
    lang = lang or current_lang()
    if item.kind == ItemKind.LAB:
        return _("Fix (auto-graded checks)") if key == FIX_KEY else _("Diagnosis (root cause and evidence)")
    point = next((p for p in item.question.rubric.all() if p.key == key), None)
    return point.localized("text", lang) if point else key


def lab_evidence(item: InterviewItem, lang: str | None = None) -> dict:
    """The measurements behind a lab's auto scores: the best fix's checks, the diagnosis rubric, the flags."""
    lang = lang or current_lang()
    attempt = item.attempt
    fix = best_fix(attempt)
    flags = []
    if attempt is not None:
        for lab_run in attempt.lab_runs.filter(kind=LabRun.Kind.FIX).exclude(flags=[]).order_by("created_at"):
            for flag in lab_run.flags:
                flags.append(
                    {
                        "run": lab_run.pk,
                        "text": flag.get(lang) or flag.get("en", ""),
                        "pattern": flag.get("pattern", ""),
                    }
                )
    detail = (attempt.diagnosis_detail or {}) if attempt else {}
    return {
        "opened": attempt is not None,
        "fix": None
        if fix is None
        else {
            "id": fix.pk,
            "percent": fix.fix_percent,
            "passed": fix.passed,
            "checks": [localized(c) for c in fix.checks],
        },
        "fixes": attempt.lab_runs.filter(kind=LabRun.Kind.FIX).count() if attempt else 0,
        "diagnosis": None
        if attempt is None or attempt.diagnosed_at is None
        else {
            "root_cause": attempt.diagnosis_choice,
            "text": attempt.diagnosis_text,
            "score": attempt.diagnosis_score,
            "root_cause_correct": detail.get("root_cause_correct"),
            "evidence_percent": detail.get("evidence_percent"),
            "points": diagnosis_feedback(detail, lang),
        },
        "flags": flags,
    }


def final_answer_html(item: InterviewItem) -> str:
    """The candidate's answer as scored when the item froze, or the last draft if it never froze."""
    if item.answer_id:
        return item.answer.text_html
    return render_markdown(item.draft) if item.draft.strip() else ""


def sheet(scorecard: Scorecard, lang: str | None = None, posted=None, error_field: str = "") -> list[dict]:
    """The scoring page's rows: per item what the candidate answered, what good looks like, and the points.

    ``posted`` (the submitted form) wins over stored values, so a refused form comes back as it was typed."""
    lang = lang or current_lang()
    posted = posted or {}
    points = points_of(scorecard)
    rows = []
    items = scorecard.interview.items.select_related("question", "lab", "lab_version", "attempt", "answer")
    for item in items.prefetch_related("question__rubric"):
        rubric = {p.key: p for p in item.question.rubric.all()} if item.kind == ItemKind.QUESTION else {}
        point_rows = []
        for point in (p for p in points if p.item_id == item.pk):
            field = point_field(point)
            point_rows.append({
                "point": point, "field": field, "label": point_label(item, point.key, lang),
                "weight": rubric[point.key].weight if point.key in rubric else None,
                "score": posted.get(f"score-{point.pk}", "" if point.score is None else str(point.score)),
                "note": posted.get(f"note-{point.pk}", point.note),
                "reason": posted.get(f"reason-{point.pk}", point.override_reason),
                "error": bool(error_field) and error_field.startswith(field),
            })  # fmt: skip
        row = {"item": item, "number": item.position + 1, "kind": item.kind, "title": item_title(item, lang),
               "points": point_rows}  # fmt: skip
        if item.kind == ItemKind.QUESTION:
            # Bank HTML is rendered and sanitised when the bank is loaded; answers by render_markdown (nh3).
            row.update(
                prompt_html=mark_safe(item.question.localized("prompt_html", lang)),
                reference_html=mark_safe(item.question.localized("answer_html", lang)),
                answer_html=mark_safe(final_answer_html(item)),
                # The same breakdown the candidate sees after practising: computed when the item froze.
                feedback=feedback_points(
                    item.answer.coverage, {k: p.localized("text", lang) for k, p in rubric.items()}, lang
                )
                if item.answer_id
                else [],
            )
        else:
            row["lab"] = lab_evidence(item, lang)
        rows.append(row)
    return rows

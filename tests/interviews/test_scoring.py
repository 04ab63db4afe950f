"""Scoring an interview: scorecards prefilled from the labs' grades, overrides, submitting, privacy,
the panel's combined scorecard and its exports."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from core.roles import Role
from interviews import clock, scorecard_export, scoring, taking
from interviews.errors import InterviewRefused
from interviews.models import Event, Interview, PointScore, Scorecard
from labs import services as lab_services
from labs.models import Attempt, LabRun
from sandbox.models import Run
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

CHECKS = [
    {"name": "heldout", "type": "heldout_loss", "passed": True, "measured": "0.12", "threshold": "< 0.5",
     "detail": "", "source": "grader", "gate": False, "counts": "distinguishing"},
    {"name": "trained", "type": "loss_drop", "passed": False, "measured": "0.9", "threshold": "< 0.8",
     "detail": "", "source": "grader", "gate": False, "counts": "distinguishing"},
]  # fmt: skip


def graded_fix(attempt: Attempt, percent: int, passed: bool = False, flags=()) -> LabRun:
    run = Run.objects.create(files=dict(attempt.files), status=Run.Status.FAILED, purpose="grade")
    return LabRun.objects.create(
        run=run, version=attempt.version, attempt=attempt, kind=LabRun.Kind.FIX, seed=attempt.seed,
        fix_percent=percent, passed=passed, graded_at=timezone.now(), checks=CHECKS, flags=list(flags),
    )  # fmt: skip


def finished_interview(make_interview, *, panel=(), fix_percent: int | None = 75, diagnosis: bool = True) -> Interview:
    """An interview the candidate took (a draft, a graded fix, a diagnosis) and that is now awaiting scoring."""
    interview = taking.start(make_interview(panel=panel))
    taking.autosave(interview.items.get(kind="question"), "NCCL all-reduce sums gradients across ranks.")
    lab_item = taking.open_item(interview.items.get(kind="lab"))
    if fix_percent is not None:
        graded_fix(lab_item.attempt, 25)
        graded_fix(
            lab_item.attempt, fix_percent, flags=[{"en": "loss clamped", "zh": "损失被截断", "pattern": "clamp"}]
        )
    if diagnosis:
        lab_services.submit_diagnosis(
            lab_item.attempt, "unnormalised-inputs", "The loss goes to NaN because inputs are not standardised."
        )
    clock.finish(interview)
    interview.refresh_from_db()
    assert interview.status == Interview.Status.AWAITING_SCORING
    return interview


def fill(scorecard: Scorecard, by, value: int = 3, reason: str = "agreed with the measure", **extra) -> Scorecard:
    """Score every point ``value`` (overrides get ``reason``), with a recommendation and a summary."""
    points = {p.pk: scoring.PointInput(score=value, reason=reason if p.auto not in (None, value) else "")
              for p in scoring.points_of(scorecard)}  # fmt: skip
    extra.setdefault("recommendation", "yes")
    extra.setdefault("summary", "Solid debugging, clear explanations.")
    return scoring.save_scores(scorecard, by, points, **extra)


def point(scorecard: Scorecard, key: str) -> PointScore:
    return PointScore.objects.get(scorecard=scorecard, key=key)


# --- prefill and overrides -------------------------------------------------------------------------


def test_lab_points_are_prefilled_from_the_best_graded_fix_and_the_diagnosis(make_interview, interviewer):
    interview = finished_interview(make_interview, fix_percent=75)
    card = scoring.scorecard_for(interview, interviewer)
    attempt = interview.items.get(kind="lab").attempt
    fix, diagnosis = point(card, "fix"), point(card, "diagnosis")
    assert (fix.auto, fix.score) == (3, 3)  # best fix 75 % → 3, not the 25 % one
    assert diagnosis.auto == diagnosis.score == round(attempt.diagnosis_score / 25)
    question = interview.items.get(kind="question").question
    keys = set(PointScore.objects.filter(scorecard=card, item__kind="question").values_list("key", flat=True))
    assert keys == set(question.rubric.values_list("key", flat=True))
    assert not PointScore.objects.filter(scorecard=card, item__kind="question", score__isnull=False).exists()
    # Opening again makes nothing twice.
    assert scoring.scorecard_for(interview, interviewer).pk == card.pk
    assert PointScore.objects.filter(scorecard=card).count() == len(keys) + 2


def test_a_lab_nobody_graded_starts_at_zero(make_interview, interviewer):
    interview = finished_interview(make_interview, fix_percent=None, diagnosis=False)
    card = scoring.scorecard_for(interview, interviewer)
    assert (point(card, "fix").auto, point(card, "diagnosis").auto) == (0, 0)


def test_an_override_needs_a_reason_and_keeps_who_when_and_why(make_interview, interviewer, login):
    interview = finished_interview(make_interview)
    card = scoring.scorecard_for(interview, interviewer)
    fix = point(card, "fix")
    with pytest.raises(InterviewRefused, match="reason") as refused:
        scoring.save_scores(card, interviewer, {fix.pk: scoring.PointInput(score=1)})
    assert refused.value.field == "item2.fix.reason"
    assert point(card, "fix").score == 3

    client = login(interviewer)
    url = reverse("interviews:score", args=[interview.pk])
    response = client.post(url, {f"score-{fix.pk}": "1", f"note-{fix.pk}": "", f"reason-{fix.pk}": ""})
    assert response.status_code == 400
    assert "write the reason for the override" in response.content.decode()
    assert point(card, "fix").score == 3

    reason = "The fix clamps the loss instead of normalising the inputs."
    response = client.post(url, {f"score-{fix.pk}": "1", f"note-{fix.pk}": "cover-up", f"reason-{fix.pk}": reason})
    assert response.status_code == 302
    fix = point(card, "fix")
    assert (fix.score, fix.auto, fix.override_reason, fix.note) == (1, 3, reason, "cover-up")
    assert fix.overridden_at is not None
    event = interview.events.get(kind=Event.Kind.OVERRIDDEN)
    assert event.actor == interviewer
    assert event.detail == {"key": "fix", "auto": 3, "from": 3, "to": 1, "reason": reason}
    assert interview.events.filter(kind=Event.Kind.SCORED, actor=interviewer).exists()


def test_scores_must_be_0_to_4(make_interview, interviewer):
    interview = finished_interview(make_interview)
    card = scoring.scorecard_for(interview, interviewer)
    some = next(p for p in scoring.points_of(card) if p.auto is None)
    for bad in (5, "-1", "two", True):
        with pytest.raises(InterviewRefused, match="0 to 4"):
            scoring.save_scores(card, interviewer, {some.pk: scoring.PointInput(score=bad)})


def test_scoring_waits_for_the_end_of_the_interview(make_interview, interviewer, login):
    interview = taking.start(make_interview())
    with pytest.raises(InterviewRefused, match="awaiting scoring"):
        scoring.scorecard_for(interview, interviewer)
    response = login(interviewer).get(reverse("interviews:score", args=[interview.pk]))
    assert response.status_code == 200
    assert "Scoring opens once the interview is over" in response.content.decode()
    assert not Scorecard.objects.exists()


# --- submitting -----------------------------------------------------------------------------------


def test_submit_needs_every_point_a_recommendation_and_a_summary(make_interview, interviewer, login):
    interview = finished_interview(make_interview)
    card = scoring.scorecard_for(interview, interviewer)
    with pytest.raises(InterviewRefused, match="recommendation") as refused:
        scoring.submit(card, interviewer)
    assert "item1." in str(refused.value) and "summary" in str(refused.value)

    # Through the page: the scores typed are saved, the submit is refused, naming what is missing.
    first, *rest = [p for p in scoring.points_of(card) if p.auto is None]
    client = login(interviewer)
    response = client.post(
        reverse("interviews:score", args=[interview.pk]),
        {
            f"score-{first.pk}": "2",
            f"note-{first.pk}": "",
            "recommendation": "yes",
            "summary": "ok",
            "action": "submit",
        },
    )
    assert response.status_code == 400
    assert "Before submitting, fill in" in response.content.decode()
    card.refresh_from_db()
    assert card.submitted_at is None and point(card, first.key).score == 2

    fill(card, interviewer)
    scoring.submit(card, interviewer)
    card.refresh_from_db()
    assert card.submitted_at is not None
    assert interview.events.filter(kind=Event.Kind.SUBMITTED, actor=interviewer).count() == 1


def test_a_submitted_scorecard_cannot_change(make_interview, interviewer, login):
    interview = finished_interview(make_interview)
    card = fill(scoring.scorecard_for(interview, interviewer), interviewer)
    scoring.submit(card, interviewer)
    some = scoring.points_of(card)[0]
    with pytest.raises(InterviewRefused, match="submitted"):
        scoring.save_scores(card, interviewer, {some.pk: scoring.PointInput(score=0)})
    with pytest.raises(InterviewRefused, match="submitted"):
        scoring.submit(card, interviewer)
    client = login(interviewer)
    url = reverse("interviews:score", args=[interview.pk])
    response = client.post(url, {f"score-{some.pk}": "0", f"note-{some.pk}": "", "summary": "changed"})
    assert response.status_code == 400
    assert "can no longer change" in response.content.decode()
    card.refresh_from_db()
    assert card.summary == "Solid debugging, clear explanations." and point(card, some.key).score == 3
    page = client.get(url).content.decode()
    assert "read-only" in page and "<fieldset disabled>" in page


def test_the_interview_is_scored_when_the_whole_panel_submitted(
    make_interview, interviewer, co_interviewer, staff_admin
):
    interview = finished_interview(make_interview, panel=[co_interviewer])
    admin_card = fill(scoring.scorecard_for(interview, staff_admin), staff_admin)
    scoring.submit(admin_card, staff_admin)  # an admin may score, but the panel is owner + co-interviewers
    mine = fill(scoring.scorecard_for(interview, interviewer), interviewer)
    scoring.submit(mine, interviewer)
    interview.refresh_from_db()
    assert interview.status == Interview.Status.AWAITING_SCORING
    theirs = fill(scoring.scorecard_for(interview, co_interviewer), co_interviewer)
    scoring.submit(theirs, co_interviewer)
    interview.refresh_from_db()
    assert interview.status == Interview.Status.SCORED
    # Scored interviews stay readable and scorable by whoever has not finished (an admin here).
    assert scoring.scorecard_for(interview, staff_admin).pk == admin_card.pk


def test_the_scoring_page_shows_the_rubric_the_reference_answer_and_the_lab_evidence(
    make_interview, interviewer, login
):
    interview = finished_interview(make_interview)
    question = interview.items.get(kind="question").question
    page = login(interviewer).get(reverse("interviews:score", args=[interview.pk])).content.decode()
    assert "Reference answer (interviewers only)" in page
    assert question.answer_html_en[:60] in page
    assert question.rubric.first().text_en[:40] in page
    assert "NCCL all-reduce sums gradients across ranks." in page  # the candidate's final answer
    assert "Fix score 75%" in page and "heldout" in page and "loss clamped" in page
    assert "The loss goes to NaN because inputs are not standardised." in page
    # Interviewers see the breakdown the candidate sees: each point's state and the sentence that earned it,
    # for the question's frozen answer and for the lab's diagnosis.
    assert 'data-testid="answer-points"' in page and 'data-testid="diagnosis-points"' in page
    assert "Earned by:" in page and "<q>NCCL all-reduce sums gradients across ranks.</q>" in page
    assert {"partly found", "missed"} <= set(re.findall(r'data-state="([a-z ]+)"', page))


# --- privacy and the combined scorecard --------------------------------------------------------------


def test_scores_stay_private_until_you_submit_yours(make_interview, interviewer, co_interviewer, login):
    interview = finished_interview(make_interview, panel=[co_interviewer])
    mine = fill(scoring.scorecard_for(interview, interviewer), interviewer, summary="A's private summary")
    scoring.submit(mine, interviewer)
    theirs = fill(scoring.scorecard_for(interview, co_interviewer), co_interviewer, 1, summary="B's draft summary")

    client = login(co_interviewer)
    urls = [
        reverse("interviews:scorecard", args=[interview.pk]),
        reverse("interviews:scorecard_export", args=[interview.pk, "json"]),
        reverse("interviews:scorecard_export", args=[interview.pk, "csv"]),
        reverse("api-interview-scorecard", args=[interview.pk]),
    ]
    page = client.get(urls[0])
    assert page.status_code == 200
    assert "Submit your own scorecard first" in page.content.decode()
    assert "A&#x27;s private summary" not in page.content.decode() and "private summary" not in page.content.decode()
    for url in urls[1:]:
        response = client.get(url)
        assert response.status_code == 403
        assert b"private summary" not in response.content
    # Their own scoring page shows their own scores, not A's.
    assert "private summary" not in client.get(reverse("interviews:score", args=[interview.pk])).content.decode()

    # A has submitted: A sees the combined card, with only submitted scorecards in it.
    page = login(interviewer).get(urls[0]).content.decode()
    assert "A&#x27;s private summary" in page and "B&#x27;s draft summary" not in page
    assert scorecard_export.build_scorecard(interview)["interviewers"][0]["username"] == interviewer.username
    assert len(scorecard_export.build_scorecard(interview)["interviewers"]) == 1

    scoring.submit(theirs, co_interviewer)
    page = login(co_interviewer).get(urls[0]).content.decode()
    assert "A&#x27;s private summary" in page and "B&#x27;s draft summary" in page


def test_admins_see_the_combined_scorecard_without_scoring(make_interview, interviewer, staff_admin, login):
    interview = finished_interview(make_interview)
    scoring.submit(fill(scoring.scorecard_for(interview, interviewer), interviewer), interviewer)
    page = login(staff_admin).get(reverse("interviews:scorecard", args=[interview.pk])).content.decode()
    assert "Solid debugging, clear explanations." in page


def test_items_two_points_apart_are_flagged_and_topics_aggregate(make_interview, interviewer, co_interviewer):
    interview = finished_interview(make_interview, panel=[co_interviewer])
    scoring.submit(fill(scoring.scorecard_for(interview, interviewer), interviewer, 4, reason="excellent"), interviewer)
    theirs = scoring.scorecard_for(interview, co_interviewer)
    # B agrees on the question (4 but one point at 3) and scores the lab 2 (fix) and 1 (diagnosis).
    points = {}
    for p in scoring.points_of(theirs):
        score = 4 if p.auto is None else {"fix": 2, "diagnosis": 1}[p.key]
        points[p.pk] = scoring.PointInput(score=score, reason="" if score == p.auto else "weak evidence")
    question_points = [p for p in scoring.points_of(theirs) if p.auto is None]
    points[question_points[0].pk] = scoring.PointInput(score=3)
    scoring.save_scores(theirs, co_interviewer, points, recommendation="no", summary="Needed hints.")
    scoring.submit(theirs, co_interviewer)

    data = scorecard_export.build_scorecard(interview, "en")
    question_row, lab_row = data["items"]
    n = len(question_points)
    assert question_row["scores"] == {"intv": 4, "intv2": round((3 + 4 * (n - 1)) / n, 2)}
    assert not question_row["disagreement"]
    assert lab_row["scores"] == {"intv": 4, "intv2": 1.5}
    assert lab_row["disagreement"] and lab_row["spread"] == 2.5
    assert data["disagreements"] == [2]

    question = interview.items.get(kind="question").question
    lab = interview.items.get(kind="lab").lab
    linked = lab.questions.order_by("pk").first()
    assert question_row["topic"] == question.topic.name_en
    assert lab_row["topic"] == (linked.topic.name_en if linked else str(lab.get_family_display()))
    topics = {row["topic"]: row for row in data["topics"]}
    if question_row["topic"] == lab_row["topic"]:
        row = topics[question_row["topic"]]
        assert row["items"] == [1, 2]
        assert row["scores"]["intv2"] == round((question_row["scores"]["intv2"] + 1.5) / 2, 2)
    else:
        assert topics[lab_row["topic"]]["scores"] == {"intv": 4, "intv2": 1.5}
        assert topics[lab_row["topic"]]["mean"] == 2.75
    assert {o["key"] for o in data["overrides"]} >= {"fix", "diagnosis"}
    override = next(o for o in data["overrides"] if o["interviewer"] == "intv2" and o["key"] == "fix")
    assert (override["auto"], override["score"], override["reason"]) == (3, 2, "weak evidence")
    assert override["at"]
    recommendations = {p["username"]: (p["recommendation"], p["summary"]) for p in data["interviewers"]}
    assert recommendations["intv2"] == ("no", "Needed hints.")


def test_the_topic_of_a_lab_without_linked_questions_is_its_family(make_interview):
    interview = make_interview()
    item = interview.items.get(kind="lab")
    item.lab.questions.clear()
    assert scorecard_export.item_topic(item, "en")["name"] == str(item.lab.get_family_display())


def test_exports_carry_the_combined_scorecard_and_the_api_returns_the_same(make_interview, interviewer, login):
    interview = finished_interview(make_interview)
    card = scoring.scorecard_for(interview, interviewer)
    fix = point(card, "fix")
    fill(card, interviewer, 3)
    scoring.save_scores(card, interviewer, {fix.pk: scoring.PointInput(score=4, reason="clean, minimal fix")})
    scoring.submit(card, interviewer)
    client = login(interviewer)

    response = client.get(reverse("interviews:scorecard_export", args=[interview.pk, "json"]))
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert "attachment" in response["Content-Disposition"]
    exported = json.loads(response.content)
    assert exported["interview"]["id"] == interview.pk
    assert exported["interviewers"][0]["summary"] == "Solid debugging, clear explanations."
    assert exported["items"][1]["points"][0]["key"] == "fix"
    assert exported["items"][1]["points"][0]["scores"] == {"intv": 4}
    assert exported["overrides"][0]["reason"] == "clean, minimal fix"

    api = client.get(reverse("api-interview-scorecard", args=[interview.pk]), HTTP_ACCEPT="application/json")
    assert api.status_code == 200
    assert api.json() == exported

    response = client.get(reverse("interviews:scorecard_export", args=[interview.pk, "csv"]))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    fix_row = next(r for r in rows if r["record"] == "point" and r["point"] == "fix")
    assert (fix_row["interviewer"], fix_row["score"], fix_row["auto"]) == ("intv", "4", "3")
    assert any(r["record"] == "topic" and r["interviewer"] == "mean" for r in rows)
    assert any(r["record"] == "recommendation" and r["score"] == "yes" for r in rows)
    assert any(r["record"] == "override" and r["text"] == "clean, minimal fix" for r in rows)

    formats = list(interview.events.filter(kind=Event.Kind.EXPORTED).values_list("detail__format", flat=True))
    assert formats == ["json", "api", "csv"]
    assert client.get(f"/interviews/{interview.pk}/scorecard/export.xml").status_code == 404


def test_the_combined_page_has_the_chart_exports_and_a_print_stylesheet(make_interview, interviewer, login):
    interview = finished_interview(make_interview)
    scoring.submit(fill(scoring.scorecard_for(interview, interviewer), interviewer), interviewer)
    page = login(interviewer).get(reverse("interviews:scorecard", args=[interview.pk])).content.decode()
    assert 'id="topic-chart"' in page and "chart.umd.min.js" in page and 'id="topic-chart-data"' in page
    assert reverse("interviews:scorecard_export", args=[interview.pk, "csv"]) in page
    assert "interview-review.css" in page


def test_my_scorecard_over_the_api(make_interview, interviewer, login):
    interview = finished_interview(make_interview)
    client = login(interviewer)
    url = reverse("api-interview-my-scorecard", args=[interview.pk])
    mine = client.get(url).json()
    fix = next(p for p in mine["points"] if p["key"] == "fix")
    refused = client.put(url, {"points": [{"id": fix["id"], "score": 0}]}, content_type="application/json")
    assert refused.status_code == 400
    assert "reason" in json.dumps(refused.json())
    points = [{"id": p["id"], "score": p["auto"] if p["auto"] is not None else 2} for p in mine["points"]]
    done = client.put(
        url, {"points": points, "recommendation": "strong_yes", "summary": "Great.", "submit": True},
        content_type="application/json",
    )  # fmt: skip
    assert done.status_code == 200 and done.json()["submitted_at"]
    assert Scorecard.objects.get(interviewer=interviewer).recommendation == "strong_yes"


def test_the_candidate_and_other_interviewers_get_404(make_interview, interviewer, candidate, login):
    interview = finished_interview(make_interview)
    scoring.submit(fill(scoring.scorecard_for(interview, interviewer), interviewer), interviewer)
    stranger = make_user("other-intv", Role.INTERVIEWER)
    urls = [
        reverse("interviews:review", args=[interview.pk]),
        reverse("interviews:score", args=[interview.pk]),
        reverse("interviews:scorecard", args=[interview.pk]),
        reverse("interviews:scorecard_export", args=[interview.pk, "json"]),
        reverse("interviews:scorecard_export", args=[interview.pk, "csv"]),
        reverse("api-interview-scorecard", args=[interview.pk]),
        reverse("api-interview-my-scorecard", args=[interview.pk]),
    ]
    for user in (candidate, stranger):
        client = login(user)
        for url in urls:
            assert client.get(url).status_code == 404, (user.username, url)
        assert client.post(urls[1], {"summary": "x"}).status_code == 404
    assert not Scorecard.objects.filter(interviewer__in=[candidate, stranger]).exists()

"""The interview clock and the candidate's answers, through the services."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from interviews import clock, steering, taking
from interviews.errors import InterviewRefused
from interviews.models import AnswerSnapshot, Event, Interview, InterviewItem
from labs import services as lab_services
from labs.models import Attempt
from sandbox.models import Run

pytestmark = pytest.mark.django_db


def _age(interview: Interview, minutes: int) -> None:
    """Move the start back in time, as if the candidate had started ``minutes`` ago."""
    Interview.objects.filter(pk=interview.pk).update(started_at=timezone.now() - timedelta(minutes=minutes))
    interview.refresh_from_db()


def test_lab_item_pins_the_seed_and_version_fixed_at_creation(make_interview):
    interview = taking.start(make_interview())
    lab_item = interview.items.get(kind="lab")
    item = taking.open_item(lab_item)
    assert item.attempt.seed == lab_item.seed
    assert item.attempt.version_id == lab_item.lab_version_id
    assert item.attempt.purpose == Attempt.Purpose.INTERVIEW
    # Opening again keeps the same attempt.
    assert taking.open_item(InterviewItem.objects.get(pk=lab_item.pk)).attempt_id == item.attempt_id


def test_interview_runs_go_ahead_of_practice_on_the_queue(make_interview):
    interview = taking.start(make_interview())
    item = taking.open_item(interview.items.get(kind="lab"))
    lab_run = lab_services.start_run(item.attempt)
    assert lab_run.run.priority == Run.Priority.INTERVIEW


def test_autosave_keeps_every_changed_draft_and_time_up_freezes_it(make_interview):
    interview = taking.start(make_interview())
    item = interview.items.get(kind="question")
    taking.autosave(item, "first")
    taking.autosave(item, "first")  # unchanged: no new snapshot
    taking.autosave(item, "first, then more about NCCL all-reduce")
    assert list(AnswerSnapshot.objects.filter(item=item).values_list("text", flat=True)) == [
        "first",
        "first, then more about NCCL all-reduce",
    ]
    _age(interview, 46)
    with pytest.raises(InterviewRefused, match="time is up"):
        taking.autosave(item, "written after the end")
    item.refresh_from_db()
    interview.refresh_from_db()
    assert interview.status == Interview.Status.AWAITING_SCORING
    assert item.draft == "first, then more about NCCL all-reduce"
    assert item.answer.text == item.draft and item.answer.for_interview
    assert interview.events.filter(kind=Event.Kind.FINISHED).count() == 1


def test_end_of_time_closes_the_lab_and_cancels_its_running_run(make_interview):
    interview = taking.start(make_interview())
    item = taking.open_item(interview.items.get(kind="lab"))
    lab_run = lab_services.start_run(item.attempt)
    _age(interview, 60)
    clock.settle(interview)
    lab_run.run.refresh_from_db()
    assert lab_run.run.status == Run.Status.CANCELLED
    item.attempt.refresh_from_db()
    with pytest.raises(lab_services.LabRefused, match="closed"):
        lab_services.start_run(item.attempt)
    with pytest.raises(lab_services.LabRefused, match="closed"):
        lab_services.save_files(item.attempt, item.attempt.files)


def test_a_time_boxed_item_freezes_on_its_own_while_the_interview_goes_on(make_interview):
    interview = taking.start(make_interview(time_box=5))
    item = interview.items.get(kind="question")
    taking.autosave(item, "inside the box")
    InterviewItem.objects.filter(pk=item.pk).update(opened_at=timezone.now() - timedelta(minutes=6))
    with pytest.raises(InterviewRefused, match="time is up"):
        taking.autosave(item, "too late")
    interview.refresh_from_db()
    assert interview.status == Interview.Status.IN_PROGRESS
    item.refresh_from_db()
    assert item.answer.text == "inside the box"


def test_added_time_moves_the_end(make_interview, interviewer):
    interview = taking.start(make_interview())
    _age(interview, 44)
    steering.add_time(interview, interviewer, 10)
    _age(interview, 50)  # past the planned 45 minutes, inside the 55
    item = interview.items.get(kind="question")
    taking.autosave(item, "still in time")
    assert Interview.objects.get(pk=interview.pk).status == Interview.Status.IN_PROGRESS
    assert interview.events.filter(kind=Event.Kind.TIME_ADDED, actor=interviewer).exists()


def test_interviewer_releases_the_labs_next_hint_and_a_written_one(make_interview, interviewer):
    interview = taking.start(make_interview())
    item = taking.open_item(interview.items.get(kind="lab"))
    steering.release_hint(interview, item, interviewer)
    assert list(item.attempt.hint_reveals.values_list("index", flat=True)) == [0]
    steering.release_hint(interview, interview.items.get(kind="question"), interviewer, "think about the LR")
    steering.send_note(interview, interviewer, "ten minutes left")
    kinds = [e.kind for e in taking.candidate_messages(interview)]
    assert kinds == [Event.Kind.HINT_RELEASED, Event.Kind.HINT_RELEASED, Event.Kind.NOTE_SENT]


def test_a_candidate_cannot_take_hints_in_an_interview_lab(make_interview, client, candidate):
    interview = taking.start(make_interview())
    item = taking.open_item(interview.items.get(kind="lab"))
    client.force_login(candidate)
    response = client.post(f"/api/labs/attempts/{item.attempt_id}/hints/0/")
    assert response.status_code == 400
    assert "interviewer" in response.json()["error"]["fields"]["detail"][0]
    assert not item.attempt.hint_reveals.exists()


def test_the_diagnosis_verdict_is_sealed_from_the_candidate(
    make_interview, client, candidate, django_capture_on_commit_callbacks
):
    interview = taking.start(make_interview())
    item = taking.open_item(interview.items.get(kind="lab"))
    options = item.attempt.version.spec["diagnosis"]["options"]
    client.force_login(candidate)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/labs/attempts/{item.attempt_id}/diagnosis/",
            {
                "root_cause": options[0]["key"],
                "evidence": "the loss goes to NaN after step 40 with a huge gradient norm",
            },
            content_type="application/json",
        )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["diagnosis"]["score"] is None and body["diagnosis"]["detail"] is None and body["score"] is None
    # The interviewers' record has it, and the review gets the version through the signal.
    item.attempt.refresh_from_db()
    assert item.attempt.diagnosis_score is not None
    event = interview.events.get(kind=Event.Kind.LAB_SCORED)
    assert event.detail["reason"] == "diagnosis" and event.detail["root_cause"] == options[0]["key"]

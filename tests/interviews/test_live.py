"""The interviewers' live view: what the poll returns, and the actions it offers."""

from __future__ import annotations

import pytest

from core.roles import Role
from interviews import clock, live, taking
from interviews.models import Event, Interview
from labs import services as lab_services
from sandbox.models import RunEvent, RunLogChunk
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _live(client, interview: Interview, after: str = "") -> dict:
    response = client.get(f"/api/interviews/{interview.pk}/live/" + (f"?after={after}" if after else ""))
    assert response.status_code == 200, response.content
    return response.json()


def _item(state: dict, kind: str) -> dict:
    return next(i for i in state["items"] if i["kind"] == kind)


def test_the_poll_shows_the_candidates_draft_as_autosaved(login, interviewer, make_interview):
    interview = make_interview(time_box=10)
    client = login(interviewer)
    before = _live(client, interview)
    assert before["status"] == "scheduled" and before["seconds_left"] is None
    assert _item(before, "question")["state"] == "not_opened"
    assert _item(before, "question")["time_box_left"] == 600

    interview = taking.start(interview)
    taking.autosave(interview.items.get(kind="question"), "NCCL all-reduce hangs when one rank skips a step")
    state = _live(client, interview)
    question = _item(state, "question")
    assert state["status"] == "in_progress" and 0 < state["seconds_left"] <= 45 * 60
    assert question["state"] == "open" and question["draft"] == "NCCL all-reduce hangs when one rank skips a step"
    assert question["draft_saved_at"] and 0 < question["time_box_left"] <= 600


def test_the_poll_shows_a_lab_run_and_its_output_incrementally(login, interviewer, make_interview):
    interview = taking.start(make_interview())
    client = login(interviewer)
    lab = _live(client, interview)
    assert _item(lab, "lab")["attempt"] is None and _item(lab, "lab")["seed"] == interview.items.get(kind="lab").seed

    item = taking.open_item(interview.items.get(kind="lab"))
    lab_run = lab_services.start_run(item.attempt)
    RunLogChunk.objects.create(run=lab_run.run, seq=1, text="step 0 loss 2.3\n")
    RunLogChunk.objects.create(run=lab_run.run, seq=2, text="step 1 loss nan\n")
    RunEvent.objects.create(run=lab_run.run, seq=1, kind="metric", rank=0, t=0.1, data={"step": 0, "loss": 2.3})
    attempt = _item(_live(client, interview), "lab")["attempt"]
    assert [r["id"] for r in attempt["runs"]] == [lab_run.pk]
    assert attempt["runs"][0]["status"] == "queued"
    (output,) = attempt["output"]
    assert output["run"] == lab_run.pk and [c["text"] for c in output["log"]] == [
        "step 0 loss 2.3\n",
        "step 1 loss nan\n",
    ]
    assert output["events"][0]["data"]["loss"] == 2.3 and (output["log_seq"], output["event_seq"]) == (2, 1)
    assert attempt["diagnosis"]["root_cause"] == "" and all(not h["released"] for h in attempt["hints"])

    # With the cursor, only what is new comes back.
    RunLogChunk.objects.create(run=lab_run.run, seq=3, text="rank 0 exited 1\n")
    (output,) = _item(_live(client, interview, f"{lab_run.pk}:2:1"), "lab")["attempt"]["output"]
    assert [c["text"] for c in output["log"]] == ["rank 0 exited 1\n"] and output["events"] == []
    assert output["log_seq"] == 3 and output["event_seq"] == 1

    bad = client.get(f"/api/interviews/{interview.pk}/live/?after=oops")
    assert bad.status_code == 400 and "after" in bad.json()["error"]["fields"]


def test_the_live_state_shows_diagnosis_and_fix_checks_unsealed(interviewer, make_interview):
    interview = taking.start(make_interview())
    item = taking.open_item(interview.items.get(kind="lab"))
    options = item.attempt.version.spec["diagnosis"]["options"]
    lab_services.submit_diagnosis(item.attempt, options[0]["key"], "the loss goes to nan right after the lr warmup")
    fix = lab_services.start_run(item.attempt, fix=True)
    state = live.live_state(interview, "en")
    attempt = _item(state, "lab")["attempt"]
    assert attempt["diagnosis"]["root_cause"] == options[0]["key"]
    assert attempt["diagnosis"]["score"] is not None  # interviewers see the verdict the candidate does not
    assert attempt["diagnosis"]["text"].startswith("the loss goes to nan")
    assert [f["id"] for f in attempt["fixes"]] == [fix.pk] and "checks" in attempt["fixes"][0]
    assert [e["type"] for e in attempt["timeline"]] == ["diagnosis", "fix"]


def test_the_poll_shows_the_diagnosis_as_it_is_written(login, interviewer, make_interview):
    interview = taking.start(make_interview())
    attempt = taking.open_item(interview.items.get(kind="lab")).attempt
    lab_services.save_diagnosis_draft(attempt, "", "grad norm explodes before the NaN")
    client = login(interviewer)
    item = next(i for i in _live(client, interview)["items"] if i["kind"] == "lab")
    assert item["attempt"]["diagnosis"]["draft"]["evidence"] == "grad norm explodes before the NaN"
    clock.finish(interview)
    with pytest.raises(lab_services.LabRefused, match="closed"):
        lab_services.save_diagnosis_draft(attempt, "", "written after the end")


def test_actions_reach_the_candidate_and_are_recorded(login, interviewer, make_interview):
    interview = taking.start(make_interview(time_box=10))
    question = interview.items.get(kind="question")
    lab = taking.open_item(interview.items.get(kind="lab"))
    client = login(interviewer)
    api = f"/api/interviews/{interview.pk}/live/"

    hint = client.post(api + "hint/", {"item": question.pk, "text": "Think about the ring order."}, "application/json")
    assert hint.status_code == 201 and hint.json()["text"] == "Think about the ring order."
    builtin = client.post(api + "hint/", {"item": lab.pk, "text": ""}, "application/json")
    assert builtin.status_code == 201 and builtin.json()["lab_hint"] == 0
    assert lab.attempt.hint_reveals.filter(index=0).exists()
    assert client.post(api + "time/", {"minutes": 5}, "application/json").status_code == 201
    assert client.post(api + "time/", {"minutes": 3, "item": question.pk}, "application/json").status_code == 201
    assert client.post(api + "note/", {"text": "Take your time."}, "application/json").status_code == 201

    interview.refresh_from_db()
    question.refresh_from_db()
    assert interview.extra_seconds == 300 and question.extra_seconds == 180
    kinds = list(
        Event.objects.filter(interview=interview, actor=interviewer, kind__in=Event.CANDIDATE_VISIBLE).values_list(
            "kind", flat=True
        )
    )
    assert kinds == ["hint_released", "hint_released", "time_added", "time_added", "note_sent"]
    # The candidate's side reads the same events.
    assert [e.kind for e in taking.candidate_messages(interview)] == kinds
    state = _live(client, interview)
    assert [m["text"] for m in state["messages"]][-1] == "Take your time."
    assert _item(state, "lab")["attempt"]["hints"][0]["released"]
    # And the audit trail on the detail page says who did it.
    detail = client.get(f"/interviews/{interview.pk}/").content.decode()
    assert "note: Take your time." in detail and "5 minutes added" in detail and "intv" in detail


def test_refused_actions_say_why(login, interviewer, make_interview):
    interview = taking.start(make_interview())
    question = interview.items.get(kind="question")
    client = login(interviewer)
    api = f"/api/interviews/{interview.pk}/live/"
    empty_note = client.post(api + "note/", {"text": "  "}, "application/json")
    assert empty_note.status_code == 400 and empty_note.json()["error"]["fields"]["text"] == ["text: write the note"]
    too_much = client.post(api + "time/", {"minutes": 500}, "application/json")
    assert "minutes: a whole number from 1 to 120" in too_much.json()["error"]["fields"]["minutes"][0]
    no_box = client.post(api + "time/", {"minutes": 5, "item": question.pk}, "application/json")
    assert "no time box" in str(no_box.json()["error"]["fields"])
    foreign = client.post(api + "hint/", {"item": 999999, "text": "x"}, "application/json")
    assert foreign.status_code == 400 and "item" in foreign.json()["error"]["fields"]
    assert client.post(api + "dance/", {}, "application/json").status_code == 400
    assert not Event.objects.filter(interview=interview, kind__in=Event.CANDIDATE_VISIBLE).exists()


def test_the_live_page_and_its_forms_without_script(login, interviewer, make_interview):
    interview = taking.start(make_interview())
    client = login(interviewer)
    response = client.get(f"/interviews/{interview.pk}/live/")
    html = response.content.decode()
    assert response.status_code == 200 and 'id="live-data"' in html and "js/interview-live.js" in html
    assert "vendor/chartjs/chart.umd.min.js" in html
    sent = client.post(f"/interviews/{interview.pk}/live/note/", {"text": "Five minutes left."}, follow=True)
    assert sent.redirect_chain[-1][0] == f"/interviews/{interview.pk}/live/" and "Sent." in sent.content.decode()
    refused = client.post(f"/interviews/{interview.pk}/live/note/", {"text": ""}, follow=True)
    assert "text: write the note" in refused.content.decode()
    assert Event.objects.filter(interview=interview, kind=Event.Kind.NOTE_SENT).count() == 1


def test_who_may_watch(login, interviewer, co_interviewer, candidate, make_interview):
    interview = taking.start(make_interview(panel=[co_interviewer]))
    taking.autosave(interview.items.get(kind="question"), "draft")
    assert _item(_live(login(co_interviewer), interview), "question")["draft"] == "draft"
    stranger = make_user("intv3", Role.INTERVIEWER)
    api = f"/api/interviews/{interview.pk}/live/"
    assert login(stranger).get(api).status_code == 404
    assert login(stranger).post(api + "note/", {"text": "hi"}, "application/json").status_code == 404
    assert login(candidate).get(api).status_code in (403, 404)
    assert login(candidate).post(api + "note/", {"text": "hi"}, "application/json").status_code in (403, 404)
    assert login(candidate).get(f"/interviews/{interview.pk}/live/").status_code in (403, 404)
    assert not Event.objects.filter(interview=interview, kind=Event.Kind.NOTE_SENT).exists()


@pytest.fixture
def catalog(transactional_db):
    from django.core.management import call_command

    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    call_command("loadlabs", verbosity=0)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_live_page_follows_the_candidate_without_reloading(catalog, page, interviewer, candidate):
    from datetime import timedelta

    from django.utils import timezone

    from interviews.loops import ItemSpec
    from interviews.models import InterviewTemplate
    from interviews.scheduling import CandidateSpec, create_interview
    from questions.models import Question
    from tests.conftest import PASSWORD
    from tests.e2e.conftest import log_in
    from tests.labs.helpers import EXAMPLE, publish

    publish(EXAMPLE)
    question = Question.objects.filter(retired=False).order_by("slug").first()
    now = timezone.now()
    interview = create_interview(
        interviewer, title="Browser loop", candidate=CandidateSpec(candidate),
        items=[ItemSpec("question", question.slug), ItemSpec("lab", EXAMPLE)],
        window_opens_at=now - timedelta(minutes=1), window_closes_at=now + timedelta(hours=1), duration_minutes=30,
    )  # fmt: skip
    interview = taking.start(interview)
    item = interview.items.get(kind="question")
    log_in(page, "intv", PASSWORD)
    page.goto(f"/interviews/{interview.pk}/live/")
    draft = page.get_by_test_id(f"draft-{item.pk}")
    taking.autosave(item, "Rank 3 skipped the all-reduce")
    draft.filter(has_text="Rank 3 skipped the all-reduce").wait_for(timeout=5000)
    assert page.locator("#live-clock").inner_text().endswith("left")

    page.get_by_label("Note to the candidate").fill("Please explain the hang.")
    page.get_by_role("button", name="Send note").click()
    page.locator("#live-messages").filter(has_text="Please explain the hang.").wait_for(timeout=5000)
    assert Event.objects.filter(interview=interview, kind=Event.Kind.NOTE_SENT, actor=interviewer).exists()

    # The template form's rows: add, move up, remove.
    page.goto("/interviews/templates/new/")
    page.get_by_label("Title").fill("Two items")
    rows = page.locator(".item-row")
    assert rows.count() == 1
    rows.nth(0).locator("select").select_option(f"question:{question.slug}")
    page.get_by_role("button", name="Add a question or lab").click()
    rows.nth(1).locator("select").select_option(f"lab:{EXAMPLE}")
    rows.nth(1).locator("input[name=item_box]").fill("15")
    page.get_by_role("button", name="Add a question or lab").click()
    rows.nth(2).get_by_role("button", name="Remove").click()
    rows.nth(1).get_by_role("button", name="Move up").click()
    page.get_by_role("button", name="Save template").click()
    page.wait_for_url("**/interviews/templates/*/")
    template = InterviewTemplate.objects.get(title="Two items")
    assert [(i.kind, i.time_box_minutes) for i in template.items.all()] == [("lab", 15), ("question", None)]

"""Replaying the candidate's session: one time-ordered list of frames, and the review page around it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from core.roles import Role
from interviews import clock, playback, steering, taking
from interviews.models import Event, Interview
from labs import services as lab_services
from labs.models import LabRun
from sandbox.models import Run, RunDiagnostic
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def lab_run(attempt, files: dict, kind: str = LabRun.Kind.RUN, **fields) -> LabRun:
    run = Run.objects.create(files=files, status=Run.Status.FAILED, purpose="grade" if kind == "fix" else "run")
    return LabRun.objects.create(
        run=run, version=attempt.version, attempt=attempt, kind=kind, seed=attempt.seed, **fields
    )


@pytest.fixture
def session(make_interview, interviewer, co_interviewer, django_capture_on_commit_callbacks):
    """A session with drafts, two runs and a graded fix, a tool output, two diagnosis versions, a hint,
    a note and added time; then finished."""
    interview = taking.start(make_interview(panel=[co_interviewer]))
    question = interview.items.get(kind="question")
    taking.autosave(question, "Gradients are summed")
    taking.autosave(question, "Gradients are summed by an all-reduce across ranks.")
    lab = taking.open_item(interview.items.get(kind="lab"))
    attempt = lab.attempt
    entry = attempt.version.spec["entry"]
    original = dict(attempt.files)
    first = lab_run(attempt, original)
    RunDiagnostic.objects.create(run=first.run, kind="stacks", status="done", output="Thread 0: train_step")
    edited = {**original, entry: original[entry] + "\n# normalise the inputs\n"}
    lab_services.save_files(attempt, edited)
    lab_run(attempt, edited)
    hidden = lab_services.hidden_files(attempt.version.spec, attempt.seed)
    fix = lab_run(
        attempt, {**edited, **hidden}, LabRun.Kind.FIX,
        graded_at=timezone.now(), fix_percent=50, passed=False, checks=[],
        flags=[{"en": "loss clamped", "zh": "损失被截断", "pattern": "clamp"}],
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        lab_services.submit_diagnosis(attempt, "bad-labels", "The labels contain NaN values I think, from the data.")
    with django_capture_on_commit_callbacks(execute=True):
        lab_services.submit_diagnosis(
            attempt, "unnormalised-inputs", "Inputs are not standardised so the loss diverges to NaN."
        )
    steering.release_hint(interview, question, interviewer, "Think about what all-reduce does.")
    steering.send_note(interview, interviewer, "Ten minutes left.")
    steering.add_time(interview, interviewer, 5)
    clock.finish(interview)
    interview.refresh_from_db()
    return {"interview": interview, "hidden": hidden, "entry": entry, "fix": fix}


def test_frames_are_in_time_order_and_hold_every_kind_of_step(session):
    interview = session["interview"]
    frames = playback.frames(interview, "en")
    times = [f["at"] for f in frames]
    assert times == sorted(times)
    assert [f["index"] for f in frames] == list(range(len(frames)))
    types = [f["type"] for f in frames]
    for kind in ("draft", "run", "fix", "tool", "diagnosis", "hint", "note", "time", "event"):
        assert kind in types, kind
    drafts = [f["text"] for f in frames if f["type"] == "draft"]
    assert drafts == ["Gradients are summed", "Gradients are summed by an all-reduce across ranks."]
    # Each diagnosis the candidate submitted is a version of its own.
    diagnoses = [f for f in frames if f["type"] == "diagnosis"]
    assert [d["root_cause"] for d in diagnoses] == ["bad-labels", "unnormalised-inputs"]
    assert diagnoses[1]["text"].startswith("Inputs are not standardised")
    assert diagnoses[1]["score"] is not None and diagnoses[1]["root_cause_text"]
    # Steps happen in the order the candidate did them.
    assert types.index("draft") < types.index("run") < types.index("fix") < types.index("diagnosis")
    assert types.index("hint") < types.index("note") < types.index("time")
    hint = next(f for f in frames if f["type"] == "hint")
    assert hint["text"] == "Think about what all-reduce does." and hint["item"] == 1


def test_run_frames_carry_the_outcome_and_the_diff_since_the_previous_run(session):
    frames = [f for f in playback.frames(session["interview"], "en") if f["type"] in ("run", "fix")]
    first, second, fix = frames
    entry = session["entry"]
    assert first["diff_from"] == "original" and first["diff"] == []
    assert first["run"]["outcome"]
    assert [d["name"] for d in second["diff"]] == [entry]
    assert "+# normalise the inputs" in second["diff"][0]["diff"]
    # The graded run carries the lab's hidden files: they are not the candidate's and are not diffed.
    assert fix["diff"] == []
    assert not any(name in session["hidden"] for d in frames for name in [x["name"] for x in d["diff"]])
    assert fix["run"]["fix_percent"] == 50 and fix["run"]["score"] is not None  # interviewers see scores
    assert fix["flags"] == [{"text": "loss clamped", "pattern": "clamp"}]
    tool = next(f for f in playback.frames(session["interview"], "en") if f["type"] == "tool")
    assert tool["output"] == "Thread 0: train_step" and tool["run_id"] == first["run"]["id"]


def test_the_review_page_embeds_the_frames_with_a_slider_and_step_buttons(
    session, interviewer, co_interviewer, staff_admin, login
):
    interview = session["interview"]
    url = reverse("interviews:review", args=[interview.pk])
    for user in (interviewer, co_interviewer, staff_admin):
        response = login(user).get(url)
        assert response.status_code == 200
    page = response.content.decode()
    assert 'type="range"' in page and 'id="prev-step"' in page and 'id="next-step"' in page
    assert "interview-review.js" in page and "interview-review.css" in page
    start = page.index('<script id="playback-data" type="application/json">') + len(
        '<script id="playback-data" type="application/json">'
    )
    data = json.loads(page[start : page.index("</script>", start)])
    assert [i["kind"] for i in data["items"]] == ["question", "lab"]
    assert len(data["frames"]) == len(playback.frames(interview, "en"))
    assert "Gradients are summed by an all-reduce across ranks." in page


def test_the_review_is_readable_while_the_interview_is_in_progress(make_interview, interviewer, login):
    interview = taking.start(make_interview())
    taking.autosave(interview.items.get(kind="question"), "so far")
    page = login(interviewer).get(reverse("interviews:review", args=[interview.pk])).content.decode()
    assert "still in progress" in page and "so far" in page


def test_before_the_start_there_is_nothing_to_replay(make_interview, interviewer, login):
    interview = make_interview()
    page = login(interviewer).get(reverse("interviews:review", args=[interview.pk])).content.decode()
    assert "has not started yet" in page


def test_the_candidate_and_unrelated_interviewers_get_404(make_interview, candidate, login):
    interview = taking.start(make_interview())
    stranger = make_user("stranger", Role.INTERVIEWER)
    author = make_user("writer", Role.AUTHOR)
    for user in (candidate, stranger, author):
        client = login(user)
        for name in ("review", "score", "scorecard"):
            assert client.get(reverse(f"interviews:{name}", args=[interview.pk])).status_code == 404, (user, name)
    clock.finish(interview)
    for user in (candidate, stranger):
        client = login(user)
        for name in ("review", "score", "scorecard"):
            assert client.get(reverse(f"interviews:{name}", args=[interview.pk])).status_code == 404
        assert client.get(reverse("interviews:scorecard_export", args=[interview.pk, "csv"])).status_code == 404
    assert login(candidate).get(reverse("interviews:review", args=[999999])).status_code == 404


def test_time_added_to_an_item_and_the_session_steps_are_frames(make_interview, interviewer):
    interview = taking.start(make_interview(time_box=10))
    question = taking.open_item(interview.items.get(kind="question"))
    steering.add_time(interview, interviewer, 3, item=question)
    Interview.objects.filter(pk=interview.pk).update(started_at=timezone.now() - timedelta(minutes=50))
    interview.refresh_from_db()
    clock.settle(interview)
    frames = playback.frames(interview, "en")
    kinds = [f.get("kind") for f in frames if f["type"] == "event"]
    assert kinds[0] == Event.Kind.STARTED and Event.Kind.FINISHED in kinds and Event.Kind.ITEM_OPENED in kinds
    time = next(f for f in frames if f["type"] == "time")
    assert time["seconds"] == 180 and time["item"] == 1


# --- in the browser ------------------------------------------------------------------------------


@pytest.fixture
def loaded_bank(transactional_db):
    from django.core.management import call_command

    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    call_command("loadlabs", verbosity=0)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_stepping_through_the_playback_and_scoring_in_the_browser(
    loaded_bank, browser, live_server, interviewer, make_interview
):
    from playwright.sync_api import expect

    from interviews import scoring
    from tests.conftest import PASSWORD
    from tests.e2e.conftest import log_in

    interview = taking.start(make_interview())
    question = interview.items.get(kind="question")
    taking.autosave(question, "first words")
    taking.autosave(question, "first words, then the whole answer")
    attempt = taking.open_item(interview.items.get(kind="lab")).attempt
    entry = attempt.version.spec["entry"]
    lab_run(attempt, dict(attempt.files))
    lab_run(attempt, {**attempt.files, entry: attempt.files[entry] + "\n# scaled inputs\n"})
    clock.finish(interview)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        log_in(page, interviewer.username, PASSWORD)
        page.goto(reverse("interviews:review", args=[interview.pk]))
        draft = page.locator('.playback-item[data-item="1"] pre.draft')
        expect(draft).to_have_text("first words, then the whole answer")  # opens at the end
        expect(page.locator('.playback-item[data-item="2"] pre.diff')).to_contain_text("+# scaled inputs")
        slider = page.locator("#timeline")
        slider.fill("0")
        expect(page.locator("#playback-now")).to_contain_text("Step 1 of")
        expect(draft).to_have_count(0)
        expect(page.locator("#prev-step")).to_be_disabled()
        page.locator("#next-step").click()
        page.locator("#next-step").click()
        expect(page.locator("#playback-now")).to_contain_text("Step 3 of")
        expect(page.locator('.playback-item[data-item="1"] pre.draft')).to_have_text("first words")

        # Scoring: an override without a reason comes back with the message; with one it is kept.
        page.goto(reverse("interviews:score", args=[interview.pk]))
        fix = next(p for p in scoring.points_of(scoring.scorecard_for(interview, interviewer)) if p.key == "fix")
        page.locator(f'select[name="score-{fix.pk}"]').select_option("2")
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.locator("#form-error")).to_contain_text("write the reason for the override")
        expect(page.locator(f'select[name="score-{fix.pk}"]')).to_have_value("2")
        page.locator(f'textarea[name="reason-{fix.pk}"]').fill("Partial fix only.")
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.locator(".messages")).to_contain_text("Scores saved.")
        for select in page.locator("select").all():
            if not select.input_value():
                select.select_option("3")
        page.get_by_label("Yes", exact=True).check()
        page.locator("#summary").fill("Methodical.")
        page.get_by_role("button", name="Submit scorecard").click()
        expect(page.locator("#submitted-note")).to_be_visible()
        page.get_by_role("link", name="See the combined scorecard").click()
        expect(page.locator("#overrides")).to_contain_text("Partial fix only.")
        page.wait_for_function("() => window.Chart && Chart.getChart('topic-chart') !== undefined")
    finally:
        context.close()

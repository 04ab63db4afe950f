"""A whole interview in two browsers at once: the interviewer makes a loop and an interview, invites, and
watches; the candidate opens the link, answers, runs the NaN lab, gets a hint and submits a fix; time runs
out; two interviewers score (one overrides an auto-grade) and the combined scorecard is exported.

Lab runs are executed by the real runner and grader on the local process backend, in a thread where a
Celery worker would pick them up (as in test_labs.py)."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from playwright.sync_api import expect

from core.roles import Role
from interviews.models import Event, Interview
from labs.services import program_for
from questions.models import Question
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import log_in
from tests.e2e.test_labs import apply_files, wait_for_run_end, worker  # noqa: F401  (worker is a fixture)
from tests.labs.helpers import EXAMPLE, publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
ANSWER = (
    "A ring all-reduce runs a **reduce-scatter** and then an **all-gather**: every rank sends and receives "
    "2(N-1)/N of the data, so the bandwidth term does not grow with the number of GPUs."
)


def _new_context(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    return context


def _switch_language(page, code: str) -> None:
    page.locator(f"button.lang-choice[value={code}]").click()
    page.wait_for_load_state()


def _shoot(page, screenshot_dir, name: str) -> None:
    """The page in English and in Chinese (the README shows both)."""
    page.screenshot(path=str(screenshot_dir / f"{name}.png"), full_page=True)
    _switch_language(page, "zh-hans")
    page.screenshot(path=str(screenshot_dir / f"{name}-zh.png"), full_page=True)
    _switch_language(page, "en")


def _score_everything(page, value: str, recommendation: str, summary: str) -> None:
    for select in page.locator("#scorecard-form select").all():
        if not select.input_value():
            select.select_option(value)
    page.get_by_label(recommendation, exact=True).check()
    page.locator("#summary").fill(summary)
    page.get_by_role("button", name="Submit scorecard").click()
    expect(page.locator("#submitted-note")).to_be_visible()


def test_a_whole_interview_in_two_browsers(browser, page, live_server, worker, screenshot_dir):  # noqa: F811
    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    call_command("loadlabs", verbosity=0)
    lab = publish(EXAMPLE)
    make_user("intv", Role.INTERVIEWER)
    make_user("intv2", Role.INTERVIEWER)
    question = Question.objects.get(slug="allreduce-algorithms")

    # 1. The interviewer makes a template: a question and the NaN lab.
    interviewer = page
    log_in(interviewer, "intv", PASSWORD)
    interviewer.goto("/interviews/templates/new/")
    interviewer.get_by_label("Title").fill("Training on-call loop")
    interviewer.get_by_label("Total duration (minutes)").fill("45")
    interviewer.locator("#item-ref-1").select_option(f"question:{question.slug}")
    if interviewer.locator("select[name=item_ref]").count() < 2:
        interviewer.get_by_role("button", name="Add a question or lab").click()
    interviewer.locator("select[name=item_ref]").nth(1).select_option(f"lab:{EXAMPLE}")
    interviewer.get_by_role("button", name="Save template").click()
    expect(interviewer.locator("h1")).to_contain_text("Training on-call loop")

    # 2. An interview from it, for a candidate with no account yet, with a co-interviewer; then the invitation.
    interviewer.get_by_role("link", name="New interview from this template").click()
    interviewer.get_by_label("Candidate's name").fill("Ada Lovelace")
    interviewer.get_by_label("Candidate's e-mail").fill("ada@example.test")
    now = timezone.now()
    interviewer.get_by_label("Start window opens (UTC)").fill((now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M"))
    interviewer.get_by_label("Start window closes (UTC)").fill((now + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"))
    interviewer.get_by_label("Co-interviewers").fill("intv2")
    interviewer.get_by_role("button", name="Create interview").click()
    expect(interviewer.get_by_test_id("interview-status")).to_have_text("Scheduled")
    interview = Interview.objects.get(title="Training on-call loop")
    lab_item = interview.items.get(kind="lab")
    interviewer.get_by_role("button", name="Invite").click()
    link = interviewer.locator("#new-link").input_value()
    assert link.startswith(live_server.url + "/interviews/join/")

    # 3. The candidate opens the link in their own browser, answers the question and runs the lab.
    candidate_context = _new_context(browser, live_server)
    candidate = candidate_context.new_page()
    candidate.goto(link)
    candidate.get_by_role("button", name="Sign in to the interview").click()
    candidate.get_by_role("button", name="Start the interview").click()
    candidate.get_by_role("button", name="Open the question").click()
    candidate.get_by_label("Your answer (Markdown)").fill(ANSWER)
    expect(candidate.locator("#save-state")).to_contain_text(re.compile(r"saved at \d\d:\d\d:\d\d"), timeout=10_000)
    candidate.get_by_role("link", name="Back to the interview").click()
    candidate.get_by_role("button", name="Open the lab").click()
    candidate.wait_for_url("**/labs/attempts/*/**")
    lab_item.refresh_from_db()
    assert lab_item.attempt.seed == lab_item.seed  # the program the interviewers prepared for

    # 4. The interviewer watches: the draft, then the run's log, within a few seconds; and releases a hint.
    interviewer.goto(f"/interviews/{interview.pk}/live/")
    expect(interviewer.get_by_test_id(f"draft-{interview.items.get(kind='question').pk}")).to_contain_text(
        "reduce-scatter", timeout=5_000
    )
    candidate.get_by_role("button", name="Run", exact=True).click()
    clicked = time.monotonic()
    live_log = interviewer.locator(f"#item-{lab_item.pk} [data-field=log]")
    expect(live_log).not_to_be_empty(timeout=60_000)
    seen_after = time.monotonic() - clicked
    wait_for_run_end(candidate)
    assert candidate.locator("#run-log").inner_text().strip(), "the candidate's own log is empty"
    assert seen_after < 30, f"the live view showed the log {seen_after:.1f} s after the run was started"
    interviewer.locator(f"#item-{lab_item.pk} form[data-action=hint] button").click()
    expect(interviewer.locator("#live-messages")).to_contain_text("hint", timeout=5_000)
    first_hint = lab.current.spec["hints"][0]["en"]
    expect(interviewer.locator(f"#item-{lab_item.pk}")).to_be_visible()
    _shoot(interviewer, screenshot_dir, "interview-live")

    # 5. The candidate sees the hint, submits the solution as the fix; then time runs out.
    candidate.reload()
    expect(candidate.locator("#hints")).to_contain_text(first_hint[:40])
    attempt = lab_item.attempt
    solution = program_for(attempt.version, attempt.seed, "solution")
    apply_files(candidate, {name: solution[name] for name in attempt.version.spec["solution"]})
    candidate.get_by_role("button", name="Submit fix").click()
    candidate.wait_for_url("**/fixes/*/", timeout=150_000)
    expect(candidate.locator("#verdict")).to_contain_text("Passed: every check holds.", timeout=90_000)
    expect(candidate.locator("body")).not_to_contain_text("Evidence covers")  # the verdict on the diagnosis is sealed
    # The server's clock is the authority: move the start back so the interview ends in a few seconds.
    Interview.objects.filter(pk=interview.pk).update(
        started_at=timezone.now() - timedelta(minutes=45) + timedelta(seconds=4)
    )
    candidate.goto(f"/interviews/take/{interview.pk}/")
    expect(candidate.get_by_test_id("awaiting-scoring")).to_be_visible(timeout=20_000)
    interview.refresh_from_db()
    assert interview.status == Interview.Status.AWAITING_SCORING
    candidate_context.close()

    # Review: the playback of what happened, for the README.
    interviewer.goto(f"/interviews/{interview.pk}/review/")
    expect(interviewer.locator("#playback-now")).to_be_visible()
    _shoot(interviewer, screenshot_dir, "interview-review")

    # 6. Two interviewers score. The owner overrides the measured fix score, with a reason.
    interviewer.goto(f"/interviews/{interview.pk}/score/")
    fix_select = interviewer.locator('#scorecard-form tr.point[data-key="fix"] select')
    expect(fix_select).to_have_value("4")  # pre-filled from the passed fix
    fix_select.select_option("3")
    interviewer.locator('#scorecard-form tr.point[data-key="fix"] textarea[name^=reason]').fill(
        "Fixed it, but only after the hint."
    )
    _score_everything(interviewer, "3", "Yes", "Methodical: read the log, fixed the cause, not the symptom.")
    co_context = _new_context(browser, live_server)
    co = co_context.new_page()
    log_in(co, "intv2", PASSWORD)
    co.goto(f"/interviews/{interview.pk}/score/")
    for select in co.locator("#scorecard-form tr.point:not([data-key=fix]):not([data-key=diagnosis]) select").all():
        select.select_option("1")
    _score_everything(co, "1", "No", "Needed the hint for the lab.")
    co_context.close()

    # 7. The combined scorecard, with the disagreement flagged, exported as JSON and CSV.
    interviewer.goto(f"/interviews/{interview.pk}/scorecard/")
    expect(interviewer.locator("#overrides")).to_contain_text("only after the hint")
    interviewer.wait_for_function("() => window.Chart && Chart.getChart('topic-chart') !== undefined")
    _shoot(interviewer, screenshot_dir, "interview-scorecard")
    with interviewer.expect_download() as download:
        interviewer.get_by_role("link", name=re.compile("JSON")).click()
    data = json.loads(open(download.value.path(), encoding="utf-8").read())
    with interviewer.expect_download() as download:
        interviewer.get_by_role("link", name=re.compile("CSV")).click()
    rows = list(csv.reader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
    text = json.dumps(data, ensure_ascii=False)
    assert "Fixed it, but only after the hint." in text
    assert {"yes", "no"} <= set(re.findall(r'"recommendation": "(\w+)"', text))
    assert len(rows) > 2
    interview.refresh_from_db()
    assert interview.status == Interview.Status.SCORED
    kinds = set(interview.events.values_list("kind", flat=True))
    assert {
        Event.Kind.CREATED, Event.Kind.INVITED, Event.Kind.LINK_OPENED, Event.Kind.STARTED,
        Event.Kind.HINT_RELEASED, Event.Kind.FINISHED, Event.Kind.OVERRIDDEN, Event.Kind.SUBMITTED,
        Event.Kind.EXPORTED, Event.Kind.LAB_SCORED,
    } <= kinds  # fmt: skip

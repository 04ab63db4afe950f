"""The candidate in a real browser: the link, the start, an answer that survives closing the page,
the countdown that hands everything in when the server says time is up."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from playwright.sync_api import expect

from core.roles import Role
from interviews import scheduling
from interviews.loops import ItemSpec
from interviews.models import Interview
from interviews.scheduling import CandidateSpec, create_interview
from questions.models import Question
from tests.conftest import make_user
from tests.labs.helpers import EXAMPLE, publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
# browser, page and screenshot_dir are the e2e fixtures, shared through tests/interviews/conftest.py.


@pytest.fixture
def invitation_link(live_server):
    """An interview open now, and the path of its sign-in link."""
    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    call_command("loadlabs", verbosity=0)
    publish(EXAMPLE)
    interviewer = make_user("intv", Role.INTERVIEWER)
    candidate = make_user("cand", Role.CANDIDATE)
    question = Question.objects.filter(retired=False, rubric__isnull=False).distinct().order_by("slug").first()
    now = timezone.now()
    interview = create_interview(
        interviewer, title="Training infra loop", candidate=CandidateSpec(candidate),
        items=[ItemSpec("question", question.slug), ItemSpec("lab", EXAMPLE)],
        window_opens_at=now - timedelta(minutes=1), window_closes_at=now + timedelta(hours=2), duration_minutes=45,
    )  # fmt: skip
    _, url = scheduling.invite(interview, interviewer, live_server.url)
    return interview, url.removeprefix(live_server.url)


def _start_and_open_the_question(page, link: str) -> str:
    page.goto(link)
    page.get_by_role("button", name="Sign in to the interview").click()
    page.get_by_role("button", name="Start the interview").click()
    expect(page.locator('[data-countdown="interview"]')).to_have_text(re.compile(r"^(44|45):\d\d$"))
    page.get_by_role("button", name="Open the question").click()
    page.wait_for_url("**/items/*/")
    return page.url


def test_an_answer_survives_closing_the_page_and_freezes_at_the_end(page, invitation_link, screenshot_dir):
    interview, link = invitation_link
    item_url = _start_and_open_the_question(page, link)
    answer = page.get_by_label("Your answer (Markdown)")
    answer.fill("Ring all-reduce: **reduce-scatter** then all-gather.")
    expect(page.locator("#save-state")).to_contain_text(re.compile(r"saved at \d\d:\d\d:\d\d"), timeout=10_000)
    page.screenshot(path=str(screenshot_dir / "interview-question.png"), full_page=True)

    page.get_by_role("tab", name="Preview").click()
    expect(page.locator("#preview-pane strong")).to_have_text("reduce-scatter")
    page.get_by_role("tab", name="Write").click()

    # Close the page mid-answer and come back to the item in a new one.
    context = page.context
    page.close()
    again = context.new_page()
    again.goto(item_url)
    answer = again.get_by_label("Your answer (Markdown)")
    expect(answer).to_have_value("Ring all-reduce: **reduce-scatter** then all-gather.")
    expect(answer).to_be_editable()

    # The server moves the end to a few seconds from now: the page re-syncs its countdown on the next
    # poll, reloads at zero, and shows the kept answer read-only.
    Interview.objects.filter(pk=interview.pk).update(
        started_at=timezone.now() - timedelta(minutes=45) + timedelta(seconds=5)
    )
    expect(again.locator("#answer")).not_to_be_editable(timeout=20_000)
    expect(again.locator("#answer")).to_have_value("Ring all-reduce: **reduce-scatter** then all-gather.")
    expect(again.locator("#answer-kept")).to_contain_text("can no longer be changed")
    interview.refresh_from_db()
    assert interview.status == Interview.Status.AWAITING_SCORING
    assert interview.items.get(kind="question").answer.text.startswith("Ring all-reduce")


def test_finish_asks_first_then_shows_awaiting_scoring(page, invitation_link, screenshot_dir):
    interview, link = invitation_link
    _start_and_open_the_question(page, link)
    page.get_by_label("Your answer (Markdown)").fill("Short answer")
    page.get_by_label("Your answer (Markdown)").blur()
    expect(page.locator("#save-state")).to_contain_text("saved at")
    page.get_by_role("link", name="Back to the interview").click()
    page.screenshot(path=str(screenshot_dir / "interview-items.png"), full_page=True)
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Finish interview").click()
    expect(page.get_by_role("button", name="Finish interview")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Finish interview").click()
    expect(page.get_by_test_id("awaiting-scoring")).to_contain_text("awaiting scoring")
    page.screenshot(path=str(screenshot_dir / "interview-awaiting-scoring.png"), full_page=True)
    expect(page.locator("body")).not_to_contain_text("Score")
    page.get_by_role("link", name=re.compile("^View")).first.click()
    expect(page.locator("#answer")).not_to_be_editable()
    expect(page.locator("#answer")).to_have_value("Short answer")

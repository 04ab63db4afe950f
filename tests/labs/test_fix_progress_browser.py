"""In Chromium: a submitted fix shows where it stands, in the workspace and on its result page, as it changes.

The grading is held at "evaluating the saved model" until the page has shown that stage, so the test sees
the live update happen, and that the page was not reloaded for it.
"""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from playwright.sync_api import expect

from labs import grading
from labs.models import LabRun
from labs.progress import GRADER_EVALUATING
from tests.labs.helpers import EXAMPLE
from tests.labs.test_accessibility import Worker, axe_problems, log_in_candidate, worker  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_fix_stage_updates_live_on_its_result_page(page, worker: Worker):  # noqa: F811
    lab = log_in_candidate(page, EXAMPLE)
    page.goto(f"/labs/{lab.slug}/")
    page.get_by_role("button", name="Start a new attempt").click()
    page.wait_for_url("**/labs/attempts/*/")

    worker.hold = True
    page.locator("#fix-btn").click()
    expect(page.locator("#run-state")).to_have_text("queued: next to start")

    evaluating = threading.Event()
    go_on = threading.Event()
    write = grading.record_stage

    def held(lab_run_id: int, stage: str, **details) -> None:
        write(lab_run_id, stage, **details)
        if stage == GRADER_EVALUATING:
            evaluating.set()
            go_on.wait(timeout=120)

    fix = LabRun.objects.get(attempt__version__lab=lab, kind=LabRun.Kind.FIX)
    page.goto(f"/labs/attempts/{fix.attempt_id}/fixes/{fix.pk}/")
    stage = page.locator("#fix-stage")
    expect(stage).to_have_text("queued: next to start")
    expect(stage).to_have_attribute("aria-live", "polite")
    page.evaluate("window.notReloaded = true")
    try:
        with mock.patch("labs.grading.record_stage", held):
            worker.release()
            assert evaluating.wait(timeout=120), "grading never reached the grader"
            expect(stage).to_have_text("grading: evaluating the saved model on held-out data", timeout=10_000)
            assert page.evaluate("window.notReloaded === true"), "the page reloaded before the verdict"
            expect(page.locator("#checks")).to_have_count(0)
            assert axe_problems(page) == []
            go_on.set()
            # The verdict loads the page once, with its checks.
            expect(page.locator("#checks")).to_be_visible(timeout=120_000)
    finally:
        go_on.set()
    expect(page.locator("#fix-stage")).to_have_count(0)

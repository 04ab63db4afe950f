"""axe-core finds no serious or critical accessibility problem on the lab pages, in both languages.

axe-core comes from npm (a devDependency in package.json, installed by `npm ci` in `make test`) and
is injected into each page as it stands after the user's actions: the lab list, a lab's briefing, the
workspace of a fresh attempt, with its diff open, after a finished run (charts, log) and after a
diagnosis. The language is switched with the header's buttons, so the switch is exercised as well.
"""

from __future__ import annotations

import re
import threading
from unittest import mock

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from core.roles import Role
from labs.models import Lab, LabRun
from tests.conftest import PASSWORD, REPO, make_user
from tests.e2e.conftest import log_in
from tests.labs.helpers import EXAMPLE, publish
from tests.sandbox.helpers import in_background

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = {"serious", "critical"}
# Every ended run's state line gives its duration ("… in 7.7 s", "…用时 7.7 秒"); a live one does not.
RUN_ENDED = re.compile(r"(?: in |用时 )\d")


def axe_problems(page: Page) -> list[str]:
    """One line per serious or critical violation: rule id, impact, and the elements it concerns."""
    if not AXE.is_file():
        raise AssertionError(f"{AXE} is missing: run `npm ci` (axe-core is a devDependency)")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    problems = []
    for violation in result["violations"]:
        if violation["impact"] in BLOCKING:
            nodes = " | ".join(f"{' '.join(map(str, n['target']))} {n['html'][:100]}" for n in violation["nodes"][:6])
            problems.append(f"{violation['id']} ({violation['impact']}): {violation['help']} — {nodes}")
    return problems


class Worker:
    """Runs go to the local process backend in a thread, where a Celery worker would take them; while
    ``hold`` is set they wait in a queue instead, so a page can be seen in its waiting state."""

    def __init__(self) -> None:
        self.hold = False
        self.queued: list = []
        self.threads: list[threading.Thread] = []

    def enqueue(self, run) -> None:
        if self.hold:
            self.queued.append(run)
        else:
            self.threads.append(in_background(run, worker_name="a11y-worker"))

    def release(self) -> None:
        self.hold = False
        for run in self.queued:
            self.enqueue(run)
        self.queued.clear()


@pytest.fixture
def worker(settings):
    settings.SANDBOX_BACKEND = "process"
    worker = Worker()
    with mock.patch("sandbox.services.enqueue_run", worker.enqueue):
        yield worker
    worker.release()
    for thread in worker.threads:
        thread.join(timeout=120)


def switch_language(page: Page, language: str) -> None:
    if language == "en":
        return
    with page.expect_navigation():
        page.get_by_role("button", name="简体中文").click()
    # The switch lands back on the same page, now in Chinese.
    expect(page.get_by_role("heading", level=1)).to_have_text("实验")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")


class Audit:
    """Collects every page state's problems, so one failure lists all of them."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.found: dict[str, list[str]] = {}

    def __call__(self, name: str) -> None:
        problems = axe_problems(self.page)
        if problems:
            self.found[name] = problems

    def report(self) -> str:
        lines = (f"[{name}] {problem}" for name, problems in self.found.items() for problem in problems)
        return "serious or critical axe-core violations:\n" + "\n".join(lines)


def log_in_candidate(page: Page, slug: str) -> Lab:
    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    call_command("loadlabs", verbosity=0)
    lab = publish(slug)
    make_user("cand", Role.CANDIDATE)
    log_in(page, "cand", PASSWORD)
    return lab


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_lab_pages_have_no_serious_axe_violations(page, worker, language):
    lab = log_in_candidate(page, EXAMPLE)
    audit = Audit(page)

    page.goto("/labs/")
    switch_language(page, language)
    audit("lab list")

    title = lab.current.spec["title"]["en" if language == "en" else "zh"]
    page.get_by_role("link", name=title).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(title)
    audit("lab briefing")

    # Variant 0 of this lab reaches a non-finite loss, so after a run the charts carry their NaN markers.
    with mock.patch("labs.services.secrets.randbelow", return_value=0):
        page.locator("form[action$='/start/'] button[type=submit]").click()
        page.wait_for_url("**/labs/attempts/*/")
    expect(page.locator("#file-tabs button").first).to_be_visible()
    audit("workspace, fresh attempt")

    page.locator("#diff-btn").click()
    expect(page.locator("#diff-view")).to_be_visible()
    audit("workspace, diff open")

    page.locator("#run-btn").click()
    expect(page.locator("#run-state")).to_contain_text(RUN_ENDED, timeout=90_000)
    expect(page.locator("#run-log")).not_to_be_empty()
    audit("workspace, after a run")

    page.locator("input[name=root_cause]").first.check()
    page.locator("#evidence").fill("The loss turned NaN after the gradient norm grew by orders of magnitude.")
    page.locator("#diagnosis-form button[type=submit]").click()
    expect(page.locator(".diagnosis-score")).to_be_visible()
    audit("workspace, after a diagnosis")

    # The unchanged faulty program, submitted as a fix, is held in the queue first: its result page, opened
    # while it waits (as from the timeline), is seen before grading and must notice the verdict by itself.
    worker.hold = True
    page.locator("#fix-btn").click()
    expect(page.locator("#cancel-btn")).to_be_enabled()
    audit("workspace, fix queued")
    fix = LabRun.objects.filter(attempt__version__lab=lab, kind=LabRun.Kind.FIX).get()
    page.goto(f"/labs/attempts/{fix.attempt_id}/fixes/{fix.pk}/")
    expect(page.locator("#verdict")).to_be_visible()
    expect(page.locator("#checks")).to_have_count(0)
    audit("fix result, while grading")
    worker.release()
    expect(page.locator("#checks")).to_be_visible(timeout=120_000)
    audit("fix result")

    page.goto("/labs/")  # now with the candidate's attempts table
    audit("lab list with attempts")
    page.get_by_role("link", name=title).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(title)
    audit("lab briefing with attempts")

    assert audit.found == {}, audit.report()


def test_tool_output_has_no_serious_axe_violations(page, worker):
    """A hanging two-rank run, probed with both live tools, then cancelled."""
    lab = log_in_candidate(page, "hang-rank0-collective")
    audit = Audit(page)
    page.goto(f"/labs/{lab.slug}/")
    page.get_by_role("button", name="Start a new attempt").click()
    page.wait_for_url("**/labs/attempts/*/")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#run-state")).to_contain_text("running", timeout=60_000)
    page.wait_for_timeout(2500)  # let both ranks reach the hang before probing them
    page.locator("#stacks-btn").click()
    expect(page.locator("#tool-output pre").first).to_contain_text("rank 0", timeout=30_000)
    page.locator("#memory-btn").click()
    expect(page.locator("#tool-output details")).to_have_count(2, timeout=30_000)
    expect(page.locator("#tool-output summary").nth(1)).not_to_contain_text("pending", timeout=30_000)
    audit("workspace, tool output while running")
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#run-state")).to_contain_text(RUN_ENDED, timeout=60_000)
    audit("workspace, cancelled run")
    assert audit.found == {}, audit.report()

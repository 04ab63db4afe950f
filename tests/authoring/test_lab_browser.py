"""An author's whole loop in the browser: copy a lab into a draft, change a parameter range, see a parser
error and fix it, preview seed 3, validate on 3 seeds while the table fills, publish (a candidate's new
attempt gets the new version), roll back, and export a zip that loadlabs accepts.

Validation runs the real runner and grader on the process backend, in a thread where the authoring
worker would pick it up (the Celery routing has its own test)."""

from __future__ import annotations

import re
import threading
import zipfile
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import connection
from playwright.sync_api import expect

from authoring import lab_publishing
from authoring.models import AuthoringEvent
from core.roles import Role
from labs.loader import load_labs
from labs.models import Attempt, Lab
from labs.spec import load_lab
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import fill_editor, log_in
from tests.labs.helpers import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
# A quick lab: about 3 s a run on the process backend, six variants, so three seeds take about a minute.
SLUG = "correctness-weight-conversion-transpose"
RANGE = "ckpt_seed: {int: [1, 100000]}"


@pytest.fixture
def authoring_worker(settings):
    settings.SANDBOX_BACKEND = "process"
    threads: list[threading.Thread] = []

    def enqueue(job_id: int) -> None:
        def work() -> None:
            try:
                lab_publishing.run_validation_job(job_id)
            finally:
                connection.close()

        threads.append(threading.Thread(target=work, daemon=True))
        threads[-1].start()

    with mock.patch("authoring.lab_publishing.enqueue_validation", enqueue):
        yield
    for thread in threads:
        thread.join(timeout=180)


def test_author_loop(page, browser, live_server, authoring_worker, screenshot_dir, tmp_path):
    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    call_command("loadlabs", verbosity=0)
    v1 = publish(SLUG).current
    make_user("writer", Role.AUTHOR)
    make_user("cand", Role.CANDIDATE)
    log_in(page, "writer", PASSWORD)

    # 1. Copy the lab into a draft and change a parameter range …
    page.goto("/author/labs/")
    page.locator("#copy-lab").select_option(SLUG)
    page.get_by_role("button", name="Copy into a draft").click()
    page.wait_for_url("**/author/labs/drafts/*/")
    editor = page.locator("#code-input")
    expect(page.locator("#current-file")).to_have_text("lab.yaml")
    text = editor.input_value()
    assert RANGE in text
    # 2. … first the wrong way round: the parser's error appears next to its line, then is fixed.
    fill_editor(page, text.replace(RANGE, "ckpt_seed: {int: [50000, 1]}"))
    expect(page.locator("#check-state")).to_have_text("1 problem(s)")
    expect(page.locator("#problems")).to_contain_text("params.ckpt_seed.int: must be [low, high] with low <= high")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if RANGE in row)
    expect(page.locator("#problems")).to_contain_text(f"lab.yaml · line {line}")
    # The editor draws only the lines in view: the problem's link brings its line there, marked.
    page.locator("#problems button.problem").first.click()
    expect(page.locator(".line-mark")).to_have_count(1)
    expect(page.locator(".line-mark")).to_contain_text("[50000, 1]")  # on the line the parser named
    fill_editor(page, text.replace(RANGE, "ckpt_seed: {int: [1, 50000]}"))
    expect(page.locator("#check-state")).to_have_text("loadlabs accepts this folder")
    expect(page.locator(".line-mark")).to_have_count(0)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#save-state")).to_have_text("saved (revision 2)")
    page.screenshot(path=str(screenshot_dir / "author-lab-editor.png"), full_page=True)
    draft_url = page.url

    # 3. Preview seed 3 as a candidate would see it.
    page.locator("#preview-seed").fill("3")
    page.get_by_role("button", name="Preview", exact=True).click()
    page.wait_for_url("**/preview/?seed=3")
    expect(page.locator("#preview-title")).to_have_text(v1.spec["title"]["en"])
    expect(page.locator(".preview-banner")).to_contain_text("seed 3")
    expect(page.locator("#preview-hints li")).to_have_count(len(v1.spec["hints"]))
    assert "{{" not in page.locator("details.preview-file").first.inner_text()

    # 4. Validate on 3 seeds and watch the table fill in.
    page.goto(draft_url)
    page.locator("#validate-seeds").fill("3")
    page.get_by_role("button", name="Start validation").click()
    page.wait_for_url("**/author/labs/validations/*/")
    total = 3 * (2 + len(v1.spec["bad_fixes"]))
    rows = page.locator("#validation-rows tr")
    expect(rows.first).to_be_visible(timeout=60_000)
    partial = rows.count()
    assert 0 < partial < total  # rows arrived while the job was still running
    expect(page.locator("#job-status")).to_have_text("Passed", timeout=180_000)
    expect(rows).to_have_count(total)
    assert page.locator("#job-progress").evaluate("bar => bar.value") == 100
    page.screenshot(path=str(screenshot_dir / "author-lab-validation.png"), full_page=True)

    # 5. Publish; a candidate's new attempt gets the new version.
    page.goto(f"/author/labs/{SLUG}/")
    page.get_by_role("button", name="Publish v2").click()
    expect(page.locator(".messages")).to_contain_text("Version 2 is published")
    candidate = browser.new_context(base_url=live_server.url).new_page()
    log_in(candidate, "cand", PASSWORD)
    candidate.goto(f"/labs/{SLUG}/")
    candidate.get_by_role("button", name="Start a new attempt").click()
    candidate.wait_for_url("**/labs/attempts/*/")
    attempt = Attempt.objects.get(pk=int(candidate.url.rstrip("/").rsplit("/", 1)[1]))
    assert attempt.version.number == 2
    ckpt_seed = next(p for p in attempt.version.spec["params"] if p["name"] == "ckpt_seed")
    assert (ckpt_seed["low"], ckpt_seed["high"]) == (1, 50000)

    # 6. Roll back to version 1.
    page.get_by_role("button", name="Roll back to v1").click()
    expect(page.locator(".messages")).to_contain_text("version 1 is published again")
    assert Lab.objects.get(slug=SLUG).current_id == v1.pk

    # 7. Export version 2 as a zip; loadlabs accepts the folder unchanged.
    with page.expect_download() as download:
        page.locator("tr[data-version='2']").get_by_role("link", name="export zip").click()
    archive = tmp_path / "export.zip"
    download.value.save_as(archive)
    catalog = tmp_path / "catalog"
    zipfile.ZipFile(archive).extractall(catalog)
    v2 = Lab.objects.get(slug=SLUG).versions.get(number=2)
    assert load_lab(catalog / SLUG).content_hash() == v2.content_hash
    assert SLUG in load_labs(catalog).unchanged
    kinds = set(AuthoringEvent.objects.filter(slug=SLUG).values_list("kind", flat=True))
    assert {"created", "edited", "validation_started", "validated", "published", "rolled_back", "exported"} <= kinds
    page.goto(f"/author/labs/{SLUG}/")
    expect(page.locator("#audit")).to_contain_text(re.compile("rolled back"))

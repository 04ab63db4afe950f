"""A candidate's whole practice journey in the browser."""

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from core.roles import Role
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANSWER = (
    "First I would lower the learning rate by 10x and add warm-up. Then check the input data: "
    "assert torch.isfinite on every batch to find NaN or inf rows. With fp16 use GradScaler or switch to bf16. "
    "Log the grad norm and apply gradient clipping."
)


@pytest.fixture
def candidate_page(page):
    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    make_user("cand", Role.CANDIDATE)
    log_in(page, "cand", PASSWORD)
    return page


def search(page, query: str) -> list[str]:
    page.goto("/questions/")
    page.get_by_role("searchbox").fill(query)
    with page.expect_navigation():
        page.get_by_role("searchbox").press("Enter")
    return page.locator(".question-item h2 a").evaluate_all("links => links.map(a => a.getAttribute('href'))")


def test_search_in_english_and_chinese(candidate_page, screenshot_dir):
    page = candidate_page
    assert "/questions/nccl-timeout-single-node/" in search(page, "NCCL timeout")[:3]
    expect(page.locator(".question-item mark").first).to_be_visible()
    hrefs = search(page, "显存泄漏")
    assert "/questions/inference-gpu-memory-creep/" in hrefs[:4]
    expect(page.locator(".other-lang mark").first).to_have_text("显存")
    page.screenshot(path=str(screenshot_dir / "bank-search.png"), full_page=False)
    with page.expect_navigation():
        page.get_by_role("button", name="简体中文").click()
    assert "/questions/gradient-explosion-vanishing/" in search(page, "梯度裁剪")[:4]
    expect(page.get_by_test_id("result-count")).to_contain_text("道题")


def test_practice_journey(candidate_page, screenshot_dir):
    page = candidate_page
    page.goto("/questions/?topic=numerics")
    page.get_by_role("link", name="A PyTorch training loop only ever reports NaN loss").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("NaN loss")
    expect(page.get_by_test_id("reference-answer")).to_have_count(0)

    page.get_by_label("Your answer").fill(ANSWER)
    page.get_by_role("button", name="Submit answer").click()
    coverage = page.get_by_test_id("coverage")
    expect(coverage.get_by_role("heading")).to_contain_text("Rubric concepts covered:")
    expect(coverage.locator(".term.found", has_text="learning rate")).to_be_visible()
    expect(coverage.locator(".term.missing").first).to_be_visible()
    expect(page.get_by_test_id("reference-answer")).to_contain_text("Work from the most common cause")

    points = page.locator("fieldset.score-point")
    count = points.count()
    assert count == 6
    for i in range(count):
        level = "Fully" if i < 4 else "Missed"
        points.nth(i).get_by_label(level).check()
    page.get_by_role("button", name="Save self-score").click()
    expect(page.get_by_role("status")).to_contain_text("Self-score saved")
    expect(page.get_by_test_id("self-score")).to_contain_text("Your self-score: 71%")
    page.screenshot(path=str(screenshot_dir / "practice-attempt.png"), full_page=True)

    page.get_by_role("link", name="My progress").first.click()
    row = page.get_by_test_id("progress-table").get_by_role("row", name="Numerics & mixed precision")
    expect(row).to_contain_text("1")
    # The table is parsed before the scripts at the end of the page run: wait for Chart.js.
    page.wait_for_function("document.getElementById('progress-chart').chart !== undefined")
    chart_datasets = page.evaluate("document.getElementById('progress-chart').chart.data.datasets[0].data")
    assert sum(chart_datasets) == 1  # one strong question, drawn by Chart.js
    page.screenshot(path=str(screenshot_dir / "progress.png"), full_page=True)


def test_reveal_without_answering(candidate_page):
    page = candidate_page
    page.goto("/questions/nccl-timeout-single-node/")
    page.get_by_role("button", name="Show the reference answer without answering").click()
    expect(page.get_by_role("status")).to_contain_text("Reference answer revealed")
    expect(page.get_by_test_id("reference-answer")).to_contain_text("You revealed this without answering")

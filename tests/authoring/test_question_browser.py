"""An author edits a question's rubric in the browser: the rubric check follows each change, a parser error
appears next to its field, the save makes a version candidates see, and the exported file has the change
and parses as loadbank reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from authoring.models import AuthoringEvent
from core.roles import Role
from questions.bankfile import parse_question_text
from questions.models import Question, RubricPoint
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SLUG = "nan-loss-checklist"
TITLE = "A PyTorch training loop only ever reports NaN loss. What do you check, and in what order?"


@pytest.fixture
def author_page(page):
    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    make_user("auth", Role.AUTHOR)
    log_in(page, "auth", PASSWORD)
    return page


def score(page, index: int = 0) -> int:
    return int(page.get_by_test_id("rubric-score").nth(index).inner_text().rstrip("%"))


def test_edit_a_rubric_watch_the_check_save_and_export(author_page, screenshot_dir):
    page = author_page
    page.goto("/author/questions/?topic=numerics")
    page.get_by_role("link", name=TITLE).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(TITLE)
    check = page.get_by_test_id("rubric-check")
    learning_rate = check.get_by_test_id("rubric-result").first.locator('tr[data-key="learning-rate"]')
    expect(learning_rate).to_contain_text("found")
    before = score(page)

    # The calibration table follows the rubric too: renaming a point that a calibration answer names makes
    # the file not fit, and the name is given; renaming it back clears it.
    calibration = page.get_by_test_id("calibration")
    expect(calibration.get_by_test_id("calibration-summary")).to_contain_text(", 0 out of band.")
    key = page.locator('input[name="rubric[3].key"]')
    key.fill("unsafe-ops")
    expect(calibration.get_by_test_id("calibration-problem")).to_contain_text("unknown rubric point 'unstable-ops'")
    key.fill("unstable-ops")
    expect(calibration.get_by_test_id("calibration-problem")).to_have_count(0)
    expect(calibration.get_by_test_id("calibration-summary")).to_contain_text(", 0 out of band.")

    # A new concept the reference answer never names: the check shows it missing and the score drops.
    concepts = page.locator('textarea[name="rubric[0].concepts"]')
    concepts.fill(concepts.input_value() + "\nzebra crossing | 斑马线")
    expect(learning_rate.locator(".missing")).to_contain_text("zebra crossing")
    expect(learning_rate).to_contain_text("partly found")
    assert score(page) < before

    # A weight out of range: the parser's message appears next to that input; fixing it clears it.
    weight = page.locator('input[name="rubric[1].weight"]')
    weight.fill("9")
    error = page.locator('[data-error-for="rubric[1].weight"]')
    expect(error).to_contain_text("rubric[1].weight: must be an integer 1–5, got 9")
    expect(page.locator("#check-state")).to_have_text(
        "The file does not parse yet: see the messages next to the fields."
    )
    weight.fill("5")
    expect(error).to_be_hidden()
    expect(page.locator("#check-state")).to_have_text("The file parses as loadbank reads it.")

    # A point added in the page is checked like the others; removing it clears its message.
    page.get_by_role("button", name="Add a point").click()
    added = page.get_by_test_id("rubric-point").nth(6)
    expect(added.locator("legend").first).to_have_text("Point 7")
    added.locator('input[name="rubric[6].key"]').fill("Bad Key")
    expect(page.locator('[data-error-for="rubric[6].key"]')).to_contain_text("must be lowercase letters")
    added.get_by_role("button", name="Remove this point").click()
    expect(page.get_by_test_id("rubric-point")).to_have_count(6)
    expect(page.locator("#check-state")).to_have_text("The file parses as loadbank reads it.")

    # A misconception (after those the point has already): its pattern needs at least two groups.
    first = page.get_by_test_id("rubric-point").first
    n = first.locator('textarea[name$=".pattern"]').count()
    first.get_by_role("button", name="Add a misconception").click()
    added_m = f"rubric[0].misconceptions[{n}]"
    pattern = first.locator(f'textarea[name="{added_m}.pattern"]')
    pattern.fill("learning rate | lr | 学习率")
    expect(page.locator(f'[data-error-for="{added_m}.pattern"]')).to_contain_text("2–5 synonym lists")
    pattern.fill("learning rate | lr | 学习率\nnever matters | does not matter | 无关紧要")
    first.locator(f'input[name="{added_m}.en"]').fill("The learning rate is the first suspect, not irrelevant.")
    first.locator(f'input[name="{added_m}.zh"]').fill("学习率是首要怀疑对象，并非无关紧要。")
    expect(page.locator("#check-state")).to_have_text("The file parses as loadbank reads it.")

    # A sample answer is scored the same way, point by point.
    sample_text = "The learning rate is too high, so I would lower it and add warm-up first."
    page.locator("#sample-1").fill(sample_text)
    sample = check.get_by_test_id("rubric-result").nth(2)
    expect(sample).to_contain_text("Sample answer 1")
    expect(sample.locator('tr[data-key="learning-rate"] .found')).to_contain_text("learning rate")

    # The Markdown preview follows the editor, sanitised as the bank renders it.
    prompt = page.locator('textarea[name="prompt.en"]')
    prompt.fill(prompt.input_value() + "\n\n**Be specific.** <script>window.pwned = 1</script>")
    preview = page.locator('[data-preview-for="prompt.en"]')
    expect(preview.locator("strong")).to_have_text("Be specific.")
    assert preview.locator("script").count() == 0
    page.screenshot(path=str(screenshot_dir / "author-question-editor.png"), full_page=False)

    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".messages")).to_contain_text("Saved version 2: candidates see it now.")
    expect(page.get_by_test_id("versions").locator("> li")).to_have_count(2)
    expect(page.get_by_test_id("bank-state")).to_contain_text("Candidates see version 2, saved by auth")
    # The sample answer was saved with the version: back in its box, and scored, after the reload.
    expect(page.locator("#sample-1")).to_have_value(sample_text)
    expect(check.get_by_test_id("rubric-result").nth(2)).to_contain_text("Sample answer 1")
    question = Question.objects.get(slug=SLUG)
    assert RubricPoint.objects.get(question=question, key="learning-rate").concepts[-1] == ["zebra crossing", "斑马线"]

    with page.expect_download() as download:
        page.get_by_test_id("export-link").click()
    assert download.value.suggested_filename == f"{SLUG}.md"
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert "      - [zebra crossing, 斑马线]" in text
    spec = parse_question_text(text, Path("numerics") / f"{SLUG}.md")
    assert spec.rubric[0].concepts[-1] == ["zebra crossing", "斑马线"] and spec.rubric[1].weight == 5
    assert spec.rubric[0].misconceptions[n].pattern == [
        ["learning rate", "lr", "学习率"],
        ["never matters", "does not matter", "无关紧要"],
    ]
    assert sample_text not in text  # samples stay with the version, out of the bank's file
    kinds = set(AuthoringEvent.objects.filter(slug=SLUG, actor__username="auth").values_list("kind", flat=True))
    assert kinds == {"imported", "edited", "exported"}

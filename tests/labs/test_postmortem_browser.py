"""The automatic post-mortem captures in the workspace: the tool output and the timeline say what the
first-non-finite capture found, and that it was captured inside the program (display, not grading)."""

from __future__ import annotations

from playwright.sync_api import expect

from labs.models import LabRun
from sandbox.models import RunDiagnostic
from tests.labs.test_editor_browser import pytestmark, workspace  # noqa: F401 - the shared fixture

CAPTURE = (
    "rank 0: first non-finite loss at step 3 in layer net.0 (Linear)\n"
    "Captured automatically inside the program at its first non-finite loss (reported by the program: "
    "display only, never used for grading).\n"
    "=== rank 0 ===\n# first non-finite loss: step 3, loss nan, rank 0\n## last batch\n  input 0: shape 8x4\n"
)


def test_first_non_finite_capture_is_titled_with_step_and_layer(workspace):  # noqa: F811
    page, attempt = workspace
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#cancel-btn")).to_be_enabled()
    run = LabRun.objects.get(attempt=attempt, kind=LabRun.Kind.RUN).run
    RunDiagnostic.objects.create(run=run, kind="nonfinite", status="done", output=CAPTURE)

    title = "first non-finite loss: rank 0, step 3, in layer net.0 (Linear)"
    summary = page.locator("#tool-output summary")
    expect(summary).to_contain_text(title)
    expect(summary).to_contain_text("captured automatically inside the program; shown to you, never graded")
    expect(page.locator("#tool-output pre")).to_contain_text("input 0: shape 8x4")

    page.reload()
    item = page.locator("#timeline li a", has_text=title)
    expect(item).to_have_count(1)
    item.click()  # opens the run, whose tool output holds the capture
    expect(page.locator("#tool-output pre")).to_contain_text("input 0: shape 8x4")

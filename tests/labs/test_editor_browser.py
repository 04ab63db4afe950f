"""The workspace's code editor (CodeMirror, bundled by vendorstatic) in the browser: typing goes into
the file that is submitted, the diff shows the edit beside the original, the keyboard can indent and
leave the editor, and a frame of a stack dump opens its file at its line.

No run is executed: runs are only queued, which is all the editor's part needs (the submitted files
are stored when the run is created, and a queued run is polled like a live one)."""

from __future__ import annotations

import re
from unittest import mock

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from core.roles import Role
from labs.models import Attempt, LabRun
from labs.services import original_files
from sandbox.models import RunDiagnostic
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import fill_editor, log_in
from tests.labs.helpers import EXAMPLE, publish
from tests.labs.test_accessibility import axe_problems

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
COMMENT = "# checked the learning rate here"


@pytest.fixture
def workspace(page: Page):
    """A fresh attempt of the example lab, open in the workspace, with runs held in the queue."""
    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    call_command("loadlabs", verbosity=0)
    publish(EXAMPLE)
    make_user("cand", Role.CANDIDATE)
    log_in(page, "cand", PASSWORD)
    with mock.patch("sandbox.services.enqueue_run", lambda run: None):
        page.goto(f"/labs/{EXAMPLE}/")
        page.get_by_role("button", name="Start a new attempt").click()
        page.wait_for_url("**/labs/attempts/*/")
        expect(page.locator("#code-editor .cm-content")).to_be_visible()
        yield page, Attempt.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def test_an_edit_shows_in_the_diff_and_is_what_gets_submitted(workspace):
    page, attempt = workspace
    entry = attempt.version.spec["entry"]
    original = original_files(attempt)[entry]
    expect(page.locator("#file-tabs button[aria-selected=true]")).to_have_text(entry)
    # The plain textarea gives way to the editor, which keeps an accessible name.
    expect(page.locator("#code-input")).to_be_hidden()
    editor = page.get_by_role("textbox", name="File contents")
    expect(editor).to_be_visible()
    expect(editor).to_have_accessible_description(re.compile(r"press Escape, then Tab"))

    editor.click()
    page.keyboard.press("Control+Home")
    page.keyboard.type(COMMENT)
    page.keyboard.press("Enter")
    # Tab indents the line instead of leaving the editor.
    page.keyboard.press("Control+Home")
    page.keyboard.press("Tab")
    expect(page.locator("#save-state")).to_have_text("unsaved changes")
    edited = "    " + COMMENT + "\n" + original
    # Escape, then Tab, moves on to the next control: the keyboard is not trapped.
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('.cm-editor') === null")

    # Search and replace: Ctrl+F opens CodeMirror's panel (find and replace fields); Escape closes it.
    editor.click()
    page.keyboard.press("Control+f")
    expect(page.get_by_role("textbox", name="Find")).to_be_focused()
    page.keyboard.type("checked the")
    page.keyboard.press("Enter")  # selects the next match, which "replace" then replaces
    page.get_by_role("textbox", name="Replace").fill("looked at the")
    page.get_by_role("button", name="replace", exact=True).click()
    edited = edited.replace("checked the", "looked at the", 1)
    assert axe_problems(page) == []
    page.get_by_role("textbox", name="Find").press("Escape")
    expect(page.locator(".cm-search")).to_have_count(0)
    expect(page.locator("#code-editor .cm-content")).to_be_focused()

    page.get_by_role("button", name="Diff against original").click()
    diff = page.locator("#diff-view")
    expect(diff.locator("h3")).to_have_text([entry])
    expect(diff.locator(".cm-mergeView")).to_have_count(1)
    # Original on the left without the comment, the edit on the right, marked as a change.
    left, right = diff.locator(".cm-mergeViewEditor").nth(0), diff.locator(".cm-mergeViewEditor").nth(1)
    expect(left.get_by_role("textbox")).to_have_accessible_name(f"Original program: {entry}")
    expect(right.get_by_role("textbox")).to_have_accessible_name(f"Your version: {entry}")
    expect(left).not_to_contain_text(COMMENT)
    expect(right.locator(".cm-changedLine").first).to_contain_text("# looked at the learning rate here")
    assert axe_problems(page) == []

    page.get_by_role("button", name="Submit fix").click()
    expect(page.locator("#cancel-btn")).to_be_enabled()
    fix = LabRun.objects.get(attempt=attempt, kind=LabRun.Kind.FIX)
    attempt.refresh_from_db()
    assert attempt.files[entry] == edited
    assert fix.run.files[entry] == edited


def test_a_stack_dump_frame_opens_its_file_at_its_line(workspace):
    page, attempt = workspace
    entry = attempt.version.spec["entry"]
    lines = original_files(attempt)[entry].count("\n")
    line = min(25, lines)
    other = next((name for name in sorted(attempt.files) if name != entry), None)
    # Open another file first (when the lab has one), so the frame must switch tabs as well.
    if other:
        page.locator("#file-tabs button", has_text=other).click()
        expect(page.locator("#file-tabs button[aria-selected=true]")).to_have_text(other)

    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#cancel-btn")).to_be_enabled()
    run = LabRun.objects.get(attempt=attempt, kind=LabRun.Kind.RUN).run
    dump = (
        "== rank 0 ==\n"
        "Thread 0x00007f0000000000 (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
        f'  File "/work/program/{entry}", line 3 in main\n'
        f"py-spy: main ({entry}:{line})\n"
    )
    RunDiagnostic.objects.create(run=run, kind="stacks", status="done", output=dump)

    frames = page.locator("#tool-output .frame-link")
    expect(frames).to_have_count(2)  # the library frame stays text
    expect(page.locator("#tool-output pre")).to_contain_text('threading.py", line 320 in wait')
    assert axe_problems(page) == []
    frames.filter(has_text=f"{entry}:{line}").click()
    expect(page.locator("#file-tabs button[aria-selected=true]")).to_have_text(entry)
    expect(page.locator("#code-editor .cm-lineNumbers .cm-activeLineGutter")).to_have_text(str(line))
    assert page.evaluate("document.activeElement.classList.contains('cm-content')")


def test_a_pasted_file_keeps_its_indentation(workspace):
    page, attempt = workspace
    entry = attempt.version.spec["entry"]
    # Auto-indent and bracket closing apply to typing, not to pasted text: a pasted program is kept as is.
    text = "def main():\n    for step in range(3):\n        print((step, [1, 2]))\n\n\nmain()\n"
    fill_editor(page, text)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#save-state")).to_have_text("saved")
    attempt.refresh_from_db()
    assert attempt.files[entry] == text


def test_without_the_editor_bundle_the_plain_textarea_still_edits_and_saves(workspace):
    page, attempt = workspace
    entry = attempt.version.spec["entry"]
    page.route("**/faultline-editor*.js", lambda route: route.abort())
    page.reload()
    textarea = page.get_by_role("textbox", name="File contents")
    expect(textarea).to_be_visible()
    expect(page.locator(".cm-editor")).to_have_count(0)
    textarea.fill("print('plain')\n")
    textarea.press("Escape")
    page.keyboard.press("Tab")
    expect(textarea).not_to_be_focused()
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#save-state")).to_have_text("saved")
    attempt.refresh_from_db()
    assert attempt.files[entry] == "print('plain')\n"
    # The diff falls back to the server's unified diff of the saved files.
    page.get_by_role("button", name="Diff against original").click()
    expect(page.locator("#diff-view pre.diff")).to_contain_text("+print('plain')")

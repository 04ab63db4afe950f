"""Helpers of the browser tests; the browser fixtures themselves live in tests/conftest.py, so every
folder's browser tests share one Playwright (its sync API refuses a second one while the first runs)."""

from __future__ import annotations

import re

from playwright.sync_api import expect


def log_in(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")


def fill_editor(page, text: str) -> None:
    """Put ``text`` in place of the open file in the workspace's code editor, as one paste would, and
    wait until the editor holds exactly that (it copies its text to the hidden ``#code-input``)."""
    page.locator("#code-editor .cm-content").fill(text)
    expect(page.locator("#code-input")).to_have_value(text)


def wait_for_run_end(page, timeout: float = 90_000) -> str:
    """The workspace's run state once it says how the run ended; returns that text."""
    state = page.locator("#run-state")
    ended = r"(finished|timed out|OOM-killed|crashed|cancelled|fix passed|fix not accepted).* in \d"
    expect(state).to_contain_text(re.compile(ended), timeout=timeout)
    return state.inner_text()

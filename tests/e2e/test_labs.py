"""The candidate's lab journey in the browser, once per fault family: run → see the fault → use a
tool → diagnose → fix → pass; and a cover-up that fails with its reason shown.

Runs are executed by the real runner and grader on the local process backend, started in a thread
where a Celery worker would pick them up (the Celery round trip has its own test)."""

from __future__ import annotations

import re
import threading
from unittest import mock

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from core.roles import Role
from labs.diagnosis import grade_diagnosis
from labs.diagnosis_calibration import GOOD_MIN, calibration_path, load_calibration
from labs.models import Attempt, Lab
from labs.render import choose_params, render_text
from labs.services import program_for
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import fill_editor, log_in, wait_for_run_end
from tests.labs.helpers import publish
from tests.sandbox.helpers import in_background, log_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FAMILIES = ["nan", "leak", "hang", "perf", "correctness"]


@pytest.fixture
def worker(settings):
    settings.SANDBOX_BACKEND = "process"
    threads: list[threading.Thread] = []

    def enqueue(run) -> None:
        threads.append(in_background(run, worker_name="e2e-worker"))

    with mock.patch("sandbox.services.enqueue_run", enqueue):
        yield
    for thread in threads:
        thread.join(timeout=120)


@pytest.fixture
def candidate_page(page, worker):
    call_command("loadbank", verbosity=0)  # transactional tests start from a flushed database
    call_command("loadlabs", verbosity=0)
    make_user("cand", Role.CANDIDATE)
    log_in(page, "cand", PASSWORD)
    return page


LIVE_TOOL = {"hang": "stacks", "perf": "stacks", "leak": "memory"}


def first_lab(family: str) -> Lab:
    """The easiest lab of the family that offers the tool this test uses on it."""
    for lab in Lab.objects.filter(family=family).order_by("difficulty", "slug"):
        tools = lab.versions.order_by("-number").first().spec["tools"]
        if LIVE_TOOL.get(family, "toggle") in tools or any(t not in ("stacks", "memory") for t in tools):
            return publish(lab.slug)
    raise AssertionError(f"the catalog has no {family} lab with a tool for this test")


def open_attempt(page, lab: Lab) -> Attempt:
    page.goto("/labs/")
    page.get_by_role("link", name=lab.current.spec["title"]["en"]).click()
    page.get_by_role("button", name="Start a new attempt").click()
    page.wait_for_url("**/labs/attempts/*/")
    return Attempt.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def use_a_tool(page, lab: Lab) -> None:
    """Run the faulty program and probe it: a live dump for hangs, slowdowns and leaks, a debug toggle otherwise."""
    tool = LIVE_TOOL.get(lab.family)
    if tool:
        page.get_by_role("button", name="Run", exact=True).click()
        button = page.locator(f"#{tool}-btn")
        expect(button).to_be_enabled(timeout=60_000)
        expect(page.locator("#run-state")).to_contain_text("running", timeout=60_000)
        page.wait_for_timeout(2500)  # let the program get going before probing it
        button.click()
        output = page.locator("#tool-output pre").first
        expect(output).to_contain_text("rank 0", timeout=30_000)
        wait_for_run_end(page)
        return
    toggle = next(t for t in lab.current.spec["tools"] if t not in ("stacks", "memory"))
    page.locator(f"input[name=toggle][value={toggle}]").check()
    page.get_by_role("button", name="Run", exact=True).click()
    wait_for_run_end(page)


def record_baseline(attempt: Attempt) -> None:
    """A speedup check compares with the faulty program's time, which validatelab records; this test
    publishes without validating, so the candidate's own run of the faulty program stands in for it."""
    if not any(check["type"] == "speedup" for check in attempt.version.spec["checks"]):
        return
    run = attempt.lab_runs.get().run
    assert run.duration_seconds and not run.timed_out
    version = attempt.version
    version.baseline = {"duration": run.duration_seconds}
    version.save(update_fields=["baseline"])


def diagnose(page, attempt: Attempt) -> None:
    spec = attempt.version.spec
    diagnosis = spec["diagnosis"]
    page.locator(f"input[name=root_cause][value={diagnosis['correct']}]").check()
    # The lab's own good diagnosis, its values filled in for this attempt's seed: a sentence per concept
    # generated from the rubric would be filler, which the scorer counts as a list.
    values = choose_params(spec["slug"], spec["params"], attempt.seed)
    good = next(
        entry
        for entry in load_calibration(calibration_path(spec["slug"]), spec)
        if entry.kind == "good" and entry.lang == "en"
    )
    evidence = render_text(good.text, values).strip()
    expected, detail = grade_diagnosis(diagnosis, good.choice, evidence, values, spec["params"])
    assert good.choice == diagnosis["correct"] and expected >= GOOD_MIN, (expected, evidence)
    page.locator("#evidence").fill(evidence)
    page.get_by_role("button", name="Submit diagnosis").click()
    expect(page.locator(".diagnosis-score")).to_contain_text(f"Diagnosis score {expected}/100")
    # Point by point, as every scored answer is shown: each point, and the sentence that earned each found one.
    points = page.get_by_test_id("diagnosis-points").locator("li")
    expect(points).to_have_count(len(diagnosis["rubric"]))
    earned = sum(bool(point["evidence"]) for point in detail["points"])
    assert earned, detail
    expect(points.filter(has_text="Earned by:")).to_have_count(earned)


def apply_files(page, files: dict[str, str]) -> None:
    for name, text in files.items():
        page.locator("#file-tabs button", has_text=name).click()
        fill_editor(page, text)


def describe_fix(attempt: Attempt) -> str:
    """What a failed verdict needs to be understood: the fix's checks, metrics and log tail."""
    lab_run = attempt.lab_runs.filter(kind="fix").order_by("-pk").first()
    if lab_run is None:
        return "no fix run"
    checks = "\n".join(f"{c['name']}: {c['passed']} {c['measured']} {c['detail']}" for c in lab_run.checks)
    return f"{checks}\nmetrics: {lab_run.metrics}\nlog tail:\n{log_of(lab_run.run)[-3000:]}"


@pytest.mark.parametrize("family", FAMILIES)
def test_candidate_fixes_a_lab_of_each_family(candidate_page, family, screenshot_dir):
    page = candidate_page
    lab = first_lab(family)
    attempt = open_attempt(page, lab)
    use_a_tool(page, lab)
    expect(page.locator("#run-log"), page.locator("#run-state").inner_text()).not_to_be_empty()
    record_baseline(attempt)
    if family == "nan":
        expect(page.locator("#chart-loss")).to_be_visible()
        page.screenshot(path=str(screenshot_dir / "lab-workspace.png"), full_page=True)
    diagnose(page, attempt)
    solution = program_for(attempt.version, attempt.seed, "solution")
    apply_files(page, {name: solution[name] for name in attempt.version.spec["solution"]})
    page.get_by_role("button", name="Submit fix").click()
    page.wait_for_url("**/fixes/*/", timeout=150_000)
    try:
        expect(page.locator("#verdict")).to_contain_text("Passed: every check holds.", timeout=60_000)
    except AssertionError as failed:
        raise AssertionError(f"{failed}\n{describe_fix(attempt)}") from None
    expect(page.locator("#checks tr.fail")).to_have_count(0)
    if family == "nan":
        page.screenshot(path=str(screenshot_dir / "lab-result.png"), full_page=True)
    attempt.refresh_from_db()
    assert attempt.status == Attempt.Status.PASSED


def test_a_cover_up_fails_with_the_reason_shown(candidate_page, screenshot_dir):
    page = candidate_page
    lab = first_lab("nan")
    attempt = open_attempt(page, lab)
    name = sorted(attempt.version.spec["bad_fixes"])[0]
    bad = program_for(attempt.version, attempt.seed, f"bad:{name}")
    apply_files(page, {path: bad[path] for path in attempt.version.spec["bad_fixes"][name]})
    page.get_by_role("button", name="Submit fix").click()
    page.wait_for_url("**/fixes/*/", timeout=150_000)
    expect(page.locator("#verdict")).to_contain_text("Not fixed yet", timeout=60_000)
    # A cover-up earns nothing, and the page says which checks count and what measured them.
    expect(page.locator("#verdict")).to_contain_text("Fix score: 0%.")
    expect(page.locator("#fix-rule")).to_be_visible()
    expect(page.locator("#checks td.source").first).not_to_be_empty()
    failed = page.locator("#checks tr.fail")
    expect(failed.first).to_be_visible()
    assert "fail" in failed.first.inner_text()
    page.screenshot(path=str(screenshot_dir / "lab-result-failed.png"), full_page=True)


def first_non_finite_loss(lab_run) -> tuple[int, float]:
    """(step of the first reported non-finite loss, range of the finite positive losses before it)."""
    finite, first = [], None
    for event in lab_run.run.events.filter(kind="metric").order_by("seq"):
        loss = event.data.get("loss")
        if isinstance(loss, str) and first is None:
            first = event.data["step"]
        elif isinstance(loss, (int, float)) and loss > 0:
            finite.append(loss)
    assert first is not None, "the faulty program reported no non-finite loss"
    return first, max(finite) / min(finite)


def test_a_nan_run_is_honest_on_charts_and_status(candidate_page, screenshot_dir):
    page = candidate_page
    lab = publish("nan-lr-unnormalised")
    # Variant 0 of this lab reaches a NaN loss; some variants only blow up to ~1e13 and come back.
    with mock.patch("labs.services.secrets.randbelow", return_value=0):
        attempt = open_attempt(page, lab)
    page.get_by_role("button", name="Run", exact=True).click()
    state = wait_for_run_end(page)
    lab_run = attempt.lab_runs.get()
    step, spread = first_non_finite_loss(lab_run)
    # The program exits 0 after its loss went NaN: that is not a success.
    assert "finished with non-finite loss" in state and "passed" not in state
    note = page.locator("#nonfinite-loss")
    expect(note).to_be_visible()
    expect(note).to_contain_text(f"at step {step}, rank 0")
    log_toggle = page.locator("#log-loss")
    scale = "Chart.getChart('chart-loss').options.scales.y.type"
    if spread > 1e4:
        expect(log_toggle).to_be_checked()
        assert page.evaluate(scale) == "logarithmic"
    datasets = "Chart.getChart('chart-loss').data.datasets"
    markers = page.evaluate(f"{datasets}.filter(d => d.pointStyle === 'crossRot').length")
    assert markers >= 1
    page.locator("#chart-loss").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / "lab-nan-chart.png"), full_page=True)
    # The log can be searched and jumps to the first error-looking line (here the first NaN loss).
    log_lines = page.locator("#run-log").inner_text().splitlines()
    first_nan = next(i for i, line in enumerate(log_lines, 1) if "nan" in line.split())
    page.get_by_role("button", name="Jump to first error").click()
    expect(page.locator("#log-find-state")).to_have_text(f"line {first_nan}")
    page.get_by_label("Search the log").fill("saved model")
    page.get_by_role("button", name="Find next").click()
    saved = next(i for i, line in enumerate(log_lines, 1) if "saved model" in line)
    expect(page.locator("#log-find-state")).to_have_text(f"line {saved}")
    assert page.evaluate("window.getSelection().toString()") == "saved model"
    log_toggle.set_checked(not log_toggle.is_checked())
    assert page.evaluate(scale) == ("logarithmic" if log_toggle.is_checked() else "linear")


def test_a_nan_run_paused_at_its_first_nan_is_probed_then_resumed(candidate_page, screenshot_dir):
    page = candidate_page
    lab = publish("nan-lr-unnormalised")
    with mock.patch("labs.services.secrets.randbelow", return_value=0):  # variant 0 reaches a NaN loss
        attempt = open_attempt(page, lab)
    page.get_by_label("at the first non-finite loss").check()
    page.get_by_role("button", name="Run", exact=True).click()
    state = page.locator("#run-state")
    expect(state).to_contain_text(re.compile(r"paused at step \d+ \(first non-finite loss\)"), timeout=90_000)
    expect(page.get_by_role("button", name="Pause", exact=True)).to_be_disabled()
    expect(page.get_by_role("button", name="Step", exact=True)).to_be_enabled()
    # Held at the NaN, the program can be probed at leisure: its stacks, then its memory and tensors.
    page.get_by_role("button", name="Stack dump (all ranks)").click()
    stacks = page.locator("#tool-output details", has_text="stack dump")
    expect(stacks.locator("pre")).to_contain_text("rank 0", timeout=30_000)
    expect(stacks.locator("pre button.frame-link").first).to_be_visible()  # a frame of the lab's own code
    page.get_by_role("button", name="Memory snapshot").click()
    snapshot = page.locator("#tool-output details", has_text="memory snapshot").last
    expect(snapshot.locator("pre")).to_contain_text("torch tensors reachable through gc", timeout=30_000)
    # What the program found at the NaN was captured before it stopped.
    expect(page.locator("#tool-output summary", has_text="first non-finite loss: rank 0")).to_have_count(1)
    page.screenshot(path=str(screenshot_dir / "lab-paused.png"), full_page=True)
    assert "paused at step" in state.inner_text()
    page.get_by_role("button", name="Resume", exact=True).click()
    ended = wait_for_run_end(page)
    assert "finished with non-finite loss" in ended
    run = attempt.lab_runs.get().run
    assert [e.kind for e in run.events.filter(kind__in=["paused", "resumed"]).order_by("seq")] == ["paused", "resumed"]
    assert run.events.filter(kind="resumed").get().data["how"] == "resume"
    # The same workspace in Chinese, after the run: every control, check and tool title translated.
    with page.expect_navigation():
        page.get_by_role("button", name="简体中文").click()
    expect(page.get_by_role("button", name="单步")).to_be_visible()
    expect(page.locator("#pause-nonfinite")).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "lab-workspace-zh.png"), full_page=True)

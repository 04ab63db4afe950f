"""The validation table fills in seed by seed, and a row scored before every seed's faulty program had run is
scored again in its place once the last one has. Real runs on the process backend."""

from __future__ import annotations

import statistics
from unittest import mock

import pytest

from authoring import lab_drafts, lab_publishing
from authoring.models import ValidationJob
from labs.models import LabRun
from labs.render import choose_params

pytestmark = pytest.mark.django_db


@pytest.fixture
def process_backend(settings):
    settings.SANDBOX_BACKEND = "process"


def start(author, draft, seeds):
    with mock.patch("authoring.lab_publishing.enqueue_validation"):
        return lab_publishing.start_validation(draft, list(seeds), author)


def run_watching(job, on_progress=None, on_ask=None):
    """Run the job as the worker does, calling ``on_progress(row)`` for every row reported and ``on_ask()``
    each time validation asks whether to stop (before every run)."""
    real = lab_publishing.validate_version

    def watching(version, seeds, progress, **kwargs):
        asked = kwargs["cancelled"]

        def spy(row):
            progress(row)
            if on_progress:
                on_progress(row)

        def ask():
            if on_ask:
                on_ask()
            return asked()

        return real(version, seeds, spy, **{**kwargs, "cancelled": ask})

    with mock.patch("authoring.lab_publishing.validate_version", watching):
        return lab_publishing.run_validation_job(job.pk)


def test_each_seed_shows_its_rows_before_the_next_seed_runs(author, process_backend):
    draft = lab_drafts.create_from_scratch(author, "correctness-one-short")
    job = start(author, draft, [0, 1, 2])
    shown_before_each_run = []

    def snapshot():
        rows = ValidationJob.objects.get(pk=job.pk).rows
        shown_before_each_run.append([(r["variant"], r["seed"]) for r in rows])

    job = run_watching(job, on_ask=snapshot)
    assert job.status == ValidationJob.Status.PASSED, job.rows
    # Before seed 1's faulty program starts, the page already shows both rows of seed 0.
    assert shown_before_each_run[2] == [("baseline", 0), ("solution", 0)]
    assert shown_before_each_run[4] == [("baseline", 0), ("solution", 0), ("baseline", 1), ("solution", 1)]


SLOW_SEED_LAB = {
    "params:\n  count: {int: [10, 1000]}": "params:\n  count: {int: [10, 1000]}\n  pause: {choices: [0, 5]}",
    "  - {name: finished, type: finished_in_time}": (
        "  - {name: finished, type: finished_in_time, max_seconds: 3}\n"
        "  - {name: faster, type: speedup, min_ratio: 1.5}"
    ),
    "tools: [stacks, memory]": (
        "tools: [stacks, memory]\nbad_fixes:\n  sleepy: {en: right total but still slow, zh: 总和正确但仍然很慢}"
    ),
}
# Faulty on every seed (wrong total), and slow only where the variant draws pause 5.
SLOW_PROGRAM = """import time

time.sleep({{ pause }})
count = {{ count }}
assert sum(range(1, count)) == count * (count + 1) // 2, "the total is wrong"
"""
SLEEPY_FIX = """import time

time.sleep(5)
count = {{ count }}
assert sum(range(1, count + 1)) == count * (count + 1) // 2, "the total is wrong"
"""


def slow_seed_draft(author):
    slug = "correctness-slow-seed"
    draft = lab_drafts.create_from_scratch(author, slug)
    files = dict(draft.files)
    for old, new in SLOW_SEED_LAB.items():
        assert old in files["lab.yaml"]
        files["lab.yaml"] = files["lab.yaml"].replace(old, new)
    files["program/main.py"] = SLOW_PROGRAM
    files["bad_fixes/sleepy/main.py"] = SLEEPY_FIX
    draft = lab_drafts.save_draft(draft, files, draft.revision, author)
    spec = lab_drafts.parse_files(slug, draft.files).as_json()
    pauses = {seed: choose_params(slug, spec["params"], seed)["pause"] for seed in range(20)}
    slow = next(seed for seed, pause in pauses.items() if pause == 5)
    fast = next(seed for seed, pause in pauses.items() if pause == 0)
    return draft, slow, fast


def test_a_row_is_scored_again_in_place_once_every_seed_is_known(author, process_backend):
    """On the slow seed the faulty program also misses the time limit, so until the fast seed has run,
    "finished" looks distinguishing and the slow cover-up, which passes "exit-ok", seems to earn a third.
    Once the fast seed shows the faulty program finishing in time, "finished" is only a precondition and
    that row is scored again: 0 %. The solution's speedup, first timed against the slow seed's faulty run
    alone, is timed again against the median of both, as candidates' fixes will be."""
    draft, slow, fast = slow_seed_draft(author)
    job = start(author, draft, [slow, fast])
    reported = []
    job = run_watching(job, on_progress=lambda row: reported.append(row))

    assert [(r.variant, r.seed, r.revised) for r in reported[:6]] == [
        ("baseline", slow, False),
        ("solution", slow, False),
        ("bad:sleepy", slow, False),
        ("baseline", fast, False),
        ("solution", fast, False),
        ("bad:sleepy", fast, False),
    ]
    revised = {(r.variant, r.seed): r for r in reported[6:]}
    assert all(r.revised for r in revised.values())
    # Only rows finished before the last faulty run can change.
    assert set(revised) <= {("baseline", slow), ("solution", slow), ("bad:sleepy", slow)}
    first = reported[2]
    assert not first.ok and first.fix_percent == 33 and "scores 33 %" in first.problem
    again = revised[("bad:sleepy", slow)]
    assert again.ok and again.fix_percent == 0 and again.problem == ""

    assert job.status == ValidationJob.Status.PASSED, job.rows
    # The table keeps one row per run, in the order the runs ended, the revised one in its first place.
    assert [(r["variant"], r["seed"], r["ok"]) for r in job.rows] == [
        ("baseline", slow, True),
        ("solution", slow, True),
        ("bad:sleepy", slow, True),
        ("baseline", fast, True),
        ("solution", fast, True),
        ("bad:sleepy", fast, True),
    ]
    version = job.version
    version.refresh_from_db()
    assert sorted(version.distinguishing) == ["exit-ok", "faster"]
    assert version.validated_at is not None
    baselines = LabRun.objects.filter(version=version, variant="baseline").select_related("run")
    median = round(statistics.median(b.run.duration_seconds for b in baselines), 3)
    assert version.baseline["duration"] == median
    solution = LabRun.objects.get(version=version, variant="solution", seed=slow)
    faster = next(c for c in solution.checks if c["name"] == "faster")
    assert faster["passed"] and faster["detail"].startswith(f"faulty baseline {median:.4g} s")
    shown = next(r for r in job.rows if (r["variant"], r["seed"]) == ("solution", slow))
    assert next(c for c in shown["checks"] if c["name"] == "faster")["measured"] == faster["measured"]

"""Prove a lab version teaches what it claims, seed by seed.

On every seed the faulty program runs first, then the reference solution and every known cover-up.
The checks the faulty program fails on every seed are the version's *distinguishing* checks (stored
on the version): fix % is computed over them alone, and every other counting check is a
precondition. The solution must pass every check, and every cover-up must fail and score 0 %. Runs
execute in this process through the same runner and grader the workers use. A version that passes
everything is published: candidates get it from then on.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field

from django.utils import timezone

from labs.checks import run_checks
from labs.grading import gather_outcome
from labs.loader import refresh_question_links
from labs.models import Lab, LabRun, LabVersion
from labs.render import choose_params, render_check
from labs.run_result import recorded_result
from labs.scoring import DISPLAY, assign_roles, counted_checks, fix_passed, fix_percent
from labs.variant_runs import run_variant
from sandbox.models import Run


@dataclass
class ValidationRow:
    lab: str
    version: int
    seed: int
    variant: str
    expected: str  # "fail" | "pass"
    outcome: str  # "pass" | "fail" | "error: ..."
    failed_checks: list[str]  # checks that count and failed (display checks never count)
    seconds: float
    ok: bool
    fix_percent: int | None = None
    problem: str = ""  # why the row is not ok, when the outcome alone does not say
    run_id: int | None = None  # the sandbox run, whose log and events explain the row
    revised: bool = False  # reported again: scored over the checks of every seed, not only those before it
    margins: dict[str, float | None] = field(default_factory=dict)  # counting checks: see labs.checks.margin

    def as_dict(self) -> dict:
        return asdict(self)


def variants(version: LabVersion) -> list[tuple[str, str]]:
    spec = version.spec
    return [("baseline", "fail"), ("solution", "pass"), *((f"bad:{name}", "fail") for name in spec["bad_fixes"])]


class ValidationCancelled(Exception):
    """``cancelled()`` said stop: the rows finished so far are kept on the exception, nothing is recorded."""

    def __init__(self, rows: list[ValidationRow]) -> None:
        self.rows = rows
        super().__init__("validation cancelled")


def validate_version(
    version: LabVersion, seeds: list[int], progress=None, *, owner=None, cancelled=None, publish: bool = True
) -> list[ValidationRow]:
    """``owner`` owns the runs (so they can read their logs); ``cancelled`` is asked before every run;
    ``publish`` False records the result without making the version current (authors publish themselves).

    Seed by seed: the faulty program, then the solution and every cover-up, and ``progress(row)`` as each
    run ends, so a watcher sees every seed finish. Until the last seed's faulty program has run, rows are
    scored over the checks the faulty program failed on every seed so far; once it has, every row is scored
    again over the final distinguishing checks and baseline time, and ``progress`` gets each row that this
    changed (its verdict, or its checks' roles or values) a second time: same seed and variant, ``revised``
    set. The returned rows are the final ones."""

    def check_cancelled(rows: list[ValidationRow]) -> None:
        if cancelled and cancelled():
            raise ValidationCancelled(rows)

    def report(row: ValidationRow) -> None:
        if progress:
            progress(row)

    # The faulty runs are timed against the baseline the version had when validation started, as before any
    # run of this validation; fixes against the median of the faulty runs finished so far.
    starting_baseline = dict(version.baseline)
    done: list[tuple[int, str, str, LabRun, float, dict]] = []  # seed, variant, expected, run, seconds, baseline used
    baselines: list[LabRun] = []
    baseline_durations: list[float] = []
    rows: list[ValidationRow] = []
    reported_checks: list[list[dict]] = []  # each run's checks as reported: a watcher shows their roles and values
    for seed in seeds:
        for variant, expected in variants(version):
            check_cancelled(rows)
            is_baseline = variant == "baseline"
            measured = _measured(starting_baseline, baseline_durations)
            _use_baseline(version, starting_baseline if is_baseline else measured)
            used = dict(version.baseline)
            lab_run, seconds = _timed(version, seed, variant, owner)
            done.append((seed, variant, expected, lab_run, seconds, used))
            if is_baseline:
                baselines.append(lab_run)
                run = lab_run.run
                if run.status != Run.Status.ERROR and run.duration_seconds and not run.timed_out:
                    baseline_durations.append(run.duration_seconds)
                _use_distinguishing(version, distinguishing_checks(version.spec["checks"], baselines))
            rows.append(_row(version, seed, variant, expected, lab_run, seconds))
            reported_checks.append(lab_run.checks)
            report(rows[-1])
    # The speedup check of the solution and bad fixes compares against it, here and in candidates' attempts.
    _use_baseline(version, _measured(starting_baseline, baseline_durations))
    final = []
    for (seed, variant, expected, lab_run, seconds, used), shown, checks in zip(
        done, rows, reported_checks, strict=True
    ):
        if variant != "baseline" and used != version.baseline:
            retime_speedup(lab_run, version.baseline)
        row = _row(version, seed, variant, expected, lab_run, seconds)
        if row != shown or lab_run.checks != checks:
            row.revised = True
            report(row)
        final.append(row)
    record_validation(version, final, publish=publish)
    return final


def _measured(starting: dict, durations: list[float]) -> dict:
    """The version's baseline with the median time of the faulty runs measured so far (unchanged before any)."""
    if not durations:
        return starting
    return {**starting, "duration": round(statistics.median(durations), 3)}


def _use_baseline(version: LabVersion, baseline: dict) -> None:
    """Grading reads the version from the database, so the baseline a run is timed against is stored first."""
    if baseline != version.baseline:
        version.baseline = baseline
        LabVersion.objects.filter(pk=version.pk).update(baseline=baseline)


def _use_distinguishing(version: LabVersion, distinguishing: list[str]) -> None:
    version.distinguishing = distinguishing
    LabVersion.objects.filter(pk=version.pk).update(distinguishing=distinguishing)


def retime_speedup(lab_run: LabRun, baseline: dict) -> None:
    """Evaluate the run's speedup checks again against ``baseline`` (its wall time is kept by the runner, so
    no grader runs); the other checks keep their results. Roles are assigned afresh by :func:`rescore`."""
    spec = lab_run.version.spec
    speedups = [check for check in spec["checks"] if check["type"] == "speedup"]
    if not speedups or lab_run.run.status == Run.Status.ERROR or lab_run.passed is None:
        return
    values = choose_params(spec["slug"], spec["params"], lab_run.seed)
    outcome = gather_outcome(lab_run.run, recorded_result(lab_run.run), baseline=baseline)
    fresh = {r.name: r.as_dict() for r in run_checks([render_check(check, values) for check in speedups], outcome)}
    checks = [{**check, **fresh[check["name"]]} if check["name"] in fresh else check for check in lab_run.checks]
    LabRun.objects.filter(pk=lab_run.pk).update(checks=checks)
    lab_run.checks = checks


def _timed(version: LabVersion, seed: int, variant: str, owner=None) -> tuple[LabRun, float]:
    started = time.monotonic()
    lab_run = run_variant(version, seed, variant, owner=owner)
    return lab_run, round(time.monotonic() - started, 1)


def distinguishing_checks(checks: list[dict], baselines: list[LabRun]) -> list[str]:
    """The counting checks the faulty program failed on every seed (none when a baseline was not graded)."""
    if not baselines or any(b.passed is None for b in baselines):
        return []
    names = counted_checks(checks)
    failed_everywhere = set(names)
    for baseline in baselines:
        failed_everywhere &= {c["name"] for c in baseline.checks if not c["passed"]}
    return [name for name in names if name in failed_everywhere]


def _row(version: LabVersion, seed: int, variant: str, expected: str, lab_run: LabRun, seconds: float):
    """The row of one graded variant, with its roles and fix % over the version's distinguishing checks."""
    run = lab_run.run
    row = ValidationRow(
        lab=version.lab.slug, version=version.number, seed=seed, variant=variant, expected=expected,
        outcome="", failed_checks=[], seconds=seconds, ok=False, run_id=lab_run.run_id,
    )  # fmt: skip
    if run.status == Run.Status.ERROR or lab_run.passed is None:
        row.outcome = f"error: {run.error_message or run.status}"
        return row
    # Re-scored with the distinguishing checks this validation found (the baselines were graded before).
    checks, passed, percent = rescore(lab_run, version.distinguishing)
    row.outcome = "pass" if passed else "fail"
    row.fix_percent = percent
    row.failed_checks = [c["name"] for c in checks if not c["passed"] and c["counts"] != DISPLAY]
    row.margins = {c["name"]: c.get("margin") for c in checks if c["counts"] != DISPLAY}
    if variant == "baseline":
        row.ok = not passed and bool(version.distinguishing)
        if not passed and not version.distinguishing:
            row.problem = "no check fails on every seed's faulty program, so no check distinguishes a fix"
    elif expected == "pass":
        row.ok = passed
    else:
        row.ok = not passed and percent == 0
        if not passed and percent:
            row.problem = f"this cover-up scores {percent} %: a cover-up must score 0 %"
    return row


def rescore(lab_run: LabRun, distinguishing: list[str]) -> tuple[list[dict], bool, int]:
    """Score a graded run again over ``distinguishing`` (learnt after it was graded) and store the result."""
    checks = assign_roles(lab_run.checks, distinguishing)
    passed, percent = fix_passed(checks), fix_percent(checks)
    LabRun.objects.filter(pk=lab_run.pk).update(checks=checks, passed=passed, fix_percent=percent)
    lab_run.checks, lab_run.passed, lab_run.fix_percent = checks, passed, percent
    return checks, passed, percent


def learn_from_baseline(version: LabVersion, seed: int) -> list[str] | None:
    """For a version not yet validated: run its faulty program on ``seed`` and return the checks it fails
    (None when that run was not graded). Also records its time as the speedup baseline when none is known."""
    baseline = run_variant(version, seed, "baseline")
    run = baseline.run
    if run.status == Run.Status.ERROR or baseline.passed is None:
        return None
    if not version.baseline.get("duration") and run.duration_seconds and not run.timed_out:
        version.baseline = {**version.baseline, "duration": round(run.duration_seconds, 3)}
        LabVersion.objects.filter(pk=version.pk).update(baseline=version.baseline)
    return distinguishing_checks(version.spec["checks"], [baseline])


def record_validation(version: LabVersion, rows: list[ValidationRow], publish: bool = True) -> None:
    passed = bool(rows) and all(r.ok for r in rows)
    fields = {"validation": [r.as_dict() for r in rows]}
    if passed:
        fields["validated_at"] = timezone.now()
    LabVersion.objects.filter(pk=version.pk).update(**fields)
    if passed and publish and Lab.publish(version):
        # Candidates starting now get this version; running attempts keep theirs.
        refresh_question_links()


# Seconds one validation run of a lab family took on a 2-core CI machine, with two shards side by side
# (run and grading together): leak and hang runs wait on memory slopes and timeouts, the others are short.
RUN_SECONDS = {"leak": 55, "hang": 35, "perf": 30, "nan": 11, "correctness": 6}
# Labs far from their family's time: this one's job restarts in a fresh process, and its grader replays the
# submitted save and load in two more and trains an uninterrupted reference (about 15 s a run, alone).
LAB_RUN_SECONDS = {"correctness-resume-optimizer-state": 25}


def expected_validation_seconds(spec: dict) -> float:
    """About how long one seed of validation takes: the faulty program, the solution and every cover-up."""
    per_run = LAB_RUN_SECONDS.get(spec.get("slug", ""), RUN_SECONDS.get(spec.get("family", ""), 30))
    return per_run * (2 + len(spec.get("bad_fixes", {})))


def pending_versions() -> list[LabVersion]:
    """The newest version of every lab that has never been validated, quickest to validate first, so a
    fresh server opens its first labs within minutes instead of after the whole catalog."""
    pending = []
    for lab in Lab.objects.filter(retired=False):
        # Versions made in the browser wait for their author to validate and publish them.
        version = lab.versions.filter(origin=Lab.Origin.CATALOG).order_by("-number").first()
        if version and version.validated_at is None and not version.validation:
            pending.append(version)
    return sorted(pending, key=lambda v: (expected_validation_seconds(v.spec), v.lab.slug))


def validate_pending(seeds: int = 1) -> list[str]:
    """Validate (and so publish) what loadlabs brought in; returns the slugs that passed."""
    published = []
    for version in pending_versions():
        rows = validate_version(version, list(range(seeds)))
        if rows and all(r.ok for r in rows):
            published.append(version.lab.slug)
    return published

"""Prove a lab version teaches what it claims, seed by seed.

For every seed: the faulty program must fail at least one check, the reference
solution must pass them all, and every known cover-up must fail at least one. Runs
execute in this process through the same runner and grader the workers use. A
version that passes everything is published: candidates get it from then on.
"""

from __future__ import annotations

import secrets
import statistics
import time
from dataclasses import asdict, dataclass

from django.db import transaction
from django.utils import timezone

from labs.models import Lab, LabRun, LabVersion
from labs.services import program_for
from sandbox.models import Run
from sandbox.runner import execute_run
from sandbox.services import create_run


@dataclass
class ValidationRow:
    lab: str
    version: int
    seed: int
    variant: str
    expected: str  # "fail" | "pass"
    outcome: str  # "pass" | "fail" | "error: ..."
    failed_checks: list[str]
    seconds: float
    ok: bool

    def as_dict(self) -> dict:
        return asdict(self)


def variants(version: LabVersion) -> list[tuple[str, str]]:
    spec = version.spec
    return [("baseline", "fail"), ("solution", "pass"), *((f"bad:{name}", "fail") for name in spec["bad_fixes"])]


def run_variant(version: LabVersion, seed: int, variant: str, owner=None) -> LabRun:
    spec = version.spec
    overlay = None if variant == "baseline" else variant
    resources = spec["resources"]
    nonce = secrets.randbelow(2**31)
    with transaction.atomic():
        run = create_run(
            owner=owner, files=program_for(version, seed, overlay, nonce=nonce), entry=spec["grade_entry"],
            ranks=resources["ranks"], timeout_seconds=resources["timeout_seconds"],
            memory_mb=resources["memory_mb"], cpus=resources["cpus"],
            gpu="none" if resources["gpu"] == "optional" else resources["gpu"], purpose="validate", enqueue=False,
        )  # fmt: skip
        lab_run = LabRun.objects.create(
            run=run, version=version, kind=LabRun.Kind.VALIDATE, seed=seed, variant=variant, grader_nonce=nonce
        )
    execute_run(run.pk, worker_name="validatelab")
    lab_run.refresh_from_db()
    lab_run.run.refresh_from_db()
    return lab_run


def validate_version(version: LabVersion, seeds: list[int], progress=None) -> list[ValidationRow]:
    rows = []
    baseline_durations = []
    for seed in seeds:
        for variant, expected in variants(version):
            started = time.monotonic()
            lab_run = run_variant(version, seed, variant)
            run = lab_run.run
            failed = [c["name"] for c in lab_run.checks if not c["passed"]]
            if run.status == Run.Status.ERROR or lab_run.passed is None:
                outcome, ok = f"error: {run.error_message or run.status}", False
            else:
                outcome = "pass" if lab_run.passed else "fail"
                ok = outcome == expected
            if variant == "baseline" and run.duration_seconds and not run.timed_out:
                # Recorded at once: the speedup check of the solution and bad fixes compares against it.
                baseline_durations.append(run.duration_seconds)
                version.baseline = {**version.baseline, "duration": round(statistics.median(baseline_durations), 3)}
                LabVersion.objects.filter(pk=version.pk).update(baseline=version.baseline)
            row = ValidationRow(
                lab=version.lab.slug, version=version.number, seed=seed, variant=variant, expected=expected,
                outcome=outcome, failed_checks=failed, seconds=round(time.monotonic() - started, 1), ok=ok,
            )  # fmt: skip
            rows.append(row)
            if progress:
                progress(row)
    record_validation(version, rows)
    return rows


def record_validation(version: LabVersion, rows: list[ValidationRow]) -> None:
    from labs.loader import refresh_question_links

    passed = bool(rows) and all(r.ok for r in rows)
    fields = {"validation": [r.as_dict() for r in rows]}
    if passed:
        fields["validated_at"] = timezone.now()
    LabVersion.objects.filter(pk=version.pk).update(**fields)
    if passed:
        # Publish: candidates starting now get this version; running attempts keep theirs.
        Lab.objects.filter(pk=version.lab_id).update(current=version)
        refresh_question_links()


def pending_versions() -> list[LabVersion]:
    """The newest version of every lab that has never been validated."""
    pending = []
    for lab in Lab.objects.filter(retired=False):
        version = lab.versions.order_by("-number").first()
        if version and version.validated_at is None and not version.validation:
            pending.append(version)
    return pending


def validate_pending(seeds: int = 1) -> list[str]:
    """Validate (and so publish) what loadlabs brought in; returns the slugs that passed."""
    published = []
    for version in pending_versions():
        rows = validate_version(version, list(range(seeds)))
        if rows and all(r.ok for r in rows):
            published.append(version.lab.slug)
    return published

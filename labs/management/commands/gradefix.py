"""``manage.py gradefix <lab> --seed N --files DIR``: grade a fix exactly as a candidate's submitted fix is graded.

A stable interface for reviewers who audit grading with their own cover-ups
(docs/trust-boundary.md, "Auditing grading").
Prints one JSON object on stdout; progress and logs go to stderr. Exit status: 0 when the fix
was graded (pass or fail), 2 for a usage or input error (one line on stderr), 3 for a
platform error (the JSON object then carries ``error``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.test.utils import override_settings

from labs.loader import latest_version
from labs.models import Lab, LabRun, LabVersion
from labs.render import variant_values
from labs.services import MAX_SEED, LabRefused, clean_files, graded_run_options, hidden_files, program_for
from labs.spec import services_env
from labs.validation import learn_from_baseline, rescore
from sandbox.models import Run
from sandbox.runner import execute_run
from sandbox.services import RunRejected, create_run

SKIPPED_FOLDERS = ("__pycache__",)
CHECK_FIELDS = ("name", "type", "passed", "counts", "gate", "measured", "threshold", "source", "detail")


def input_error(message: str) -> CommandError:
    return CommandError(" ".join(message.split()), returncode=2)


def read_fix(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` as {relative POSIX path: text}; links and non-text files are refused."""
    if not folder.is_dir():
        raise input_error(f"--files {folder}: not a folder")
    files = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part in SKIPPED_FOLDERS for part in relative.parts):
            continue
        if path.is_symlink():
            raise input_error(f"--files: {relative.as_posix()} is a symbolic link; give the file itself")
        if path.is_dir():
            continue
        if not path.is_file():
            raise input_error(f"--files: {relative.as_posix()} is not a regular file")
        try:
            files[relative.as_posix()] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise input_error(f"--files: {relative.as_posix()} is not UTF-8 text") from None
    if not files:
        raise input_error(f"--files {folder}: the folder holds no files")
    return files


class Command(BaseCommand):
    help = (
        "Overlay the files in DIR onto a lab's program for one seed, run them through the sandbox and the grader "
        "exactly as a candidate's submitted fix, and print the verdict as one JSON object."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("lab", help="the lab's slug (its newest imported version is graded, validated or not)")
        parser.add_argument("--seed", type=int, required=True, help=f"the variant's seed, 0–{MAX_SEED}")
        parser.add_argument("--files", type=Path, required=True, help="folder of files that replace program files")
        parser.add_argument("--backend", choices=("docker", "process"), help="override SANDBOX_BACKEND")

    def handle(self, *args, lab: str, seed: int, files: Path, backend: str | None, **options) -> None:
        if not 0 <= seed <= MAX_SEED:
            raise input_error(f"--seed must be 0–{MAX_SEED}, got {seed}")
        found = Lab.objects.filter(slug=lab).first()
        version = latest_version(found) if found else None
        if version is None:
            raise input_error(f"unknown lab {lab!r} (run manage.py loadlabs first)")
        fix = read_fix(files)
        overrides = {"SANDBOX_BACKEND": backend} if backend else {}
        with override_settings(**overrides):
            lab_run = self.grade(version, seed, fix)
        report = verdict(version, seed, lab_run)
        self.stdout.write(json.dumps(report, ensure_ascii=False))
        if "error" in report:
            sys.exit(3)

    def grade(self, version: LabVersion, seed: int, fix: dict[str, str]) -> LabRun:
        spec = version.spec
        try:
            files = clean_files(spec, {**program_for(version, seed), **fix})
        except LabRefused as exc:
            raise input_error(str(exc)) from None
        files.update(hidden_files(spec, seed))
        distinguishing = version.distinguishing
        if distinguishing is None:
            # A candidate only ever gets validated versions, where fix % counts the checks the faulty program
            # fails. Learn them the same way on this seed, so the verdict is the one a candidate would get.
            self.stderr.write(
                f"note: {spec['slug']} v{version.number} has not been validated: running its faulty program on "
                f"seed {seed} first, to learn which checks tell a fix from the fault"
            )
            distinguishing = learn_from_baseline(version, seed)
            if distinguishing is None:
                raise CommandError(
                    f"the faulty program of {spec['slug']} could not be graded on seed {seed} (platform fault)",
                    returncode=3,
                )
        try:
            with transaction.atomic():
                run = create_run(
                    owner=None,
                    files=files,
                    enqueue=False,
                    env=services_env(spec, variant_values(spec, seed), graded=True),
                    **graded_run_options(spec),
                )
                lab_run = LabRun.objects.create(run=run, version=version, kind=LabRun.Kind.FIX, seed=seed)
        except RunRejected as exc:
            raise input_error(str(exc)) from None
        self.stderr.write(f"grading {spec['slug']} v{version.number} seed {seed} as run {run.pk}…")
        started = time.monotonic()
        execute_run(run.pk, worker_name="gradefix")
        lab_run.refresh_from_db()
        lab_run.run.refresh_from_db()
        if version.distinguishing is None and lab_run.passed is not None:
            rescore(lab_run, distinguishing)
        self.stderr.write(f"run {run.pk} ended {lab_run.run.status} after {time.monotonic() - started:.1f} s")
        return lab_run


def verdict(version: LabVersion, seed: int, lab_run: LabRun) -> dict:
    run = lab_run.run
    report = {
        "lab": version.lab.slug, "version": version.number, "seed": seed,
        "validated": version.distinguishing is not None,
        "passed": lab_run.passed, "fix_percent": lab_run.fix_percent, "status": run.status,
        "checks": [{key: check.get(key) for key in CHECK_FIELDS} for check in lab_run.checks],
    }  # fmt: skip
    if run.status == Run.Status.ERROR or lab_run.graded_at is None:
        report["error"] = run.error_message or f"the run ended {run.status} without a grade (platform fault)"
    return report

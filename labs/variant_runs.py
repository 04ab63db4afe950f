"""Run one of a lab's own variants (the faulty program, the reference fix or a cover-up) on a seed, graded.

Validation runs every variant; grading runs the reference fix when a leak check needs its level on a seed
that has none yet (``labs.reference``). Both execute the run in this process, through the same runner and
grader the workers use.
"""

from __future__ import annotations

from django.db import transaction

from labs.models import LabRun, LabVersion
from labs.render import variant_values
from labs.services import program_for
from labs.spec import services_env
from sandbox.runner import execute_run
from sandbox.services import create_run


def run_variant(
    version: LabVersion,
    seed: int,
    variant: str,
    owner=None,
    worker_name: str = "validatelab",
    priority: int | None = None,
) -> LabRun:
    """``variant``: ``baseline`` (the faulty program), ``solution`` or ``bad:<name>``. ``worker_name``: who
    executes it (the reaper tells a run whose worker restarted by it). ``priority``: a ``Run.Priority``;
    validation's own (background) by default, the graded fix's when a candidate waits for this run."""
    spec = version.spec
    overlay = None if variant == "baseline" else variant
    resources = spec["resources"]
    with transaction.atomic():
        run = create_run(
            owner=owner, files=program_for(version, seed, overlay, hidden=True), entry=spec["grade_entry"],
            ranks=resources["ranks"], timeout_seconds=resources["timeout_seconds"],
            memory_mb=resources["memory_mb"], cpus=resources["cpus"],
            gpu=resources["gpu"], purpose="validate", enqueue=False, priority=priority,
            env=services_env(spec, variant_values(spec, seed), graded=True),
        )  # fmt: skip
        lab_run = LabRun.objects.create(run=run, version=version, kind=LabRun.Kind.VALIDATE, seed=seed, variant=variant)
    execute_run(run.pk, worker_name=worker_name)
    lab_run.refresh_from_db()
    lab_run.run.refresh_from_db()
    return lab_run

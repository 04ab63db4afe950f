"""Grade a finished lab run by outcomes measured outside the candidate's process.

The sandbox calls :func:`grade_run` (registered in ``labs.apps`` for the purposes ``grade``
and ``validate``) once the run's container is gone, with the run's ``RunResult``: exit
codes, the deadline, OOM kills and memory, all measured outside the program. Grading draws
a fresh held-out seed, runs the lab's grader in its own container on the saved output and
data from that seed, applies the lab's checks, and stores each check's measured value,
threshold, source and role. What the program reported about itself (losses, counters) is
shown beside them and never counts. A crash of the grader raises, and the run ends
``error``: a platform fault, never counted against the candidate.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from labs.checks import Outcome, run_checks
from labs.flag_scan import static_flags
from labs.grader_sandbox import GraderFault, GraderJob, run_grader
from labs.models import LabRun
from labs.progress import CHECK, GRADER_EVALUATING, GRADER_STARTING, MEASUREMENTS, REFERENCE_MEMORY, record_stage
from labs.reference import reference_levels
from labs.render import choose_params, probe_seed, render_check
from labs.run_result import recorded_result, reported_by_program
from labs.scoring import assign_roles, fix_passed, fix_percent, rescore_attempt
from sandbox.instance import INSTANCE_LABEL, instance_id
from sandbox.judging import RunResult
from sandbox.models import Run, RunArtifact

__all__ = ["GraderFault", "grade_run", "gather_outcome", "new_heldout_seed"]

# Where a grader finds the submitted code (labs.grader_api.GradeContext.submitted_code reads this name).
SUBMITTED_CODE = "submitted_code.json"
HELDOUT_SEED_BITS = 62  # fits PositiveBigIntegerField, and torch's and numpy's seeders after a small offset


def new_heldout_seed() -> int:
    return secrets.randbits(HELDOUT_SEED_BITS)


log = logging.getLogger(__name__)


def grade_run(run_id: int, result: RunResult | None = None) -> bool:
    """The judge of graded runs. ``result`` None: rebuilt from what the runner recorded."""
    lab_run = LabRun.objects.select_related("version", "run").get(run_id=run_id)
    run, version = lab_run.run, lab_run.version
    spec = version.spec
    values = choose_params(spec["slug"], spec["params"], lab_run.seed)
    began = time.monotonic()
    record_stage(lab_run.pk, MEASUREMENTS)
    outcome = gather_outcome(run, result or recorded_result(run), baseline=version.baseline)
    if any(check["type"] == "metric" for check in spec["checks"]):
        # Stored before the grader starts, so a grading that crashes still shows which seed it had.
        heldout = new_heldout_seed()
        LabRun.objects.filter(pk=lab_run.pk).update(heldout_seed=heldout)
        grader_began = time.monotonic()
        outcome.metrics, outcome.grader_error = evaluate_with_grader(
            spec, run, values, heldout, lab_run.seed, progress=lambda stage: record_stage(lab_run.pk, stage)
        )
        log.info("run %s: grader answered in %.2f s", run.pk, time.monotonic() - grader_began)
    checks = [render_check(check, values) for check in spec["checks"]]
    # A reference that cannot be measured raises: the run ends as a platform fault, not counted.
    outcome.reference_memory = reference_levels(
        lab_run, outcome.result, checks, measuring=lambda: record_stage(lab_run.pk, REFERENCE_MEMORY)
    )
    measured = []
    for index, check in enumerate(checks, 1):
        record_stage(lab_run.pk, CHECK, index=index, total=len(checks), name=check["name"])
        measured.extend(run_checks([check], outcome))
    results = assign_roles([r.as_dict() for r in measured], version.distinguishing)
    passed = fix_passed(results)
    with transaction.atomic():
        LabRun.objects.filter(pk=lab_run.pk).update(
            checks=results,
            flags=static_flags(spec, run.files),
            # JSON (and PostgreSQL) has no NaN or infinity: those are kept as text.
            metrics={k: v if math.isfinite(v) else str(v) for k, v in outcome.metrics.items()}
            | ({"grader_error": outcome.grader_error} if outcome.grader_error else {}),
            passed=passed,
            fix_percent=fix_percent(results),
            graded_at=timezone.now(),
        )
        if lab_run.attempt_id:
            rescore_attempt(lab_run.attempt_id, "fix", lab_run.pk)
    log.info("run %s: graded in %.2f s (%s)", run.pk, time.monotonic() - began, "passed" if passed else "failed")
    return passed


def gather_outcome(run: Run, result: RunResult, baseline: dict | None = None) -> Outcome:
    """Measurements from ``result``; the program's own reports go to ``Outcome.reported``, for display."""
    return Outcome(
        ranks=run.ranks, timeout_seconds=run.timeout_seconds, result=result, baseline=baseline or {},
        reported=reported_by_program(run),
    )  # fmt: skip


def submitted_code(files: dict[str, str], spec: dict) -> str:
    """The program's own Python modules as the run was started with them (the lab's hidden files left out),
    as JSON for the grader: taken from the platform's record of the run, so nothing the program writes in
    its output folder (a file of this name included, which this replaces) can change the code graded."""
    hidden = set(spec.get("hidden") or {})
    code = {
        name: text
        for name, text in sorted(files.items())
        if name.endswith(".py") and "/" not in name and name[:-3].isidentifier() and name not in hidden
    }
    return json.dumps(code)


def evaluate_with_grader(
    spec: dict, run: Run, values: dict, heldout_seed: int, seed: int, progress: Callable[[str], None] | None = None
) -> tuple[dict, str]:
    """(metrics, candidate-facing reason they are missing). Raises GraderFault on a grader crash.

    ``progress``: told ``labs.progress.GRADER_STARTING``, then ``GRADER_EVALUATING`` once the grader runs."""
    resources = spec["resources"]
    job = GraderJob(
        source=spec["grader_source"], filename=f"labs/catalog/{spec['slug']}/grader.py", params=values,
        seed=heldout_seed, probe_seed=probe_seed(spec["slug"], seed), ranks=run.ranks,
        artifacts=dict(RunArtifact.objects.filter(run=run).values_list("name", "content"))
        | {SUBMITTED_CODE: submitted_code(run.files, spec).encode()},
        memory_bytes=max(2048, int(resources["memory_mb"])) * 1024**2, cpus=max(1.0, float(resources["cpus"])),
        cpu_weight=run.cpu_weight,
    )  # fmt: skip
    now = int(time.time())
    labels = {
        # The run's own labels: the reaper removes a grader container left behind by a dead worker.
        "faultline.run": str(run.pk), INSTANCE_LABEL: instance_id(), "faultline.worker": run.worker,
        "faultline.started": str(now), "faultline.deadline": str(now + int(job.timeout_seconds)),
    }  # fmt: skip
    answer = run_grader(
        job, labels, require_container=run.backend == "docker",
        on_start=progress and (lambda: progress(GRADER_STARTING)),
        on_running=progress and (lambda: progress(GRADER_EVALUATING)),
    )  # fmt: skip
    return answer.metrics, answer.candidate_error

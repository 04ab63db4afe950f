"""The reference fix's memory on the seed a fix is graded on: the ceiling of a leak check.

A leak check (``labs.checks.MemoryGrowth``) compares the level a fix held after warm-up with the level the
lab's reference fix held on the same seed. The same seed, because a lab's parameters size its data and
model: across seeds the reference's level differs by far more than a fix may exceed it. So the first
grading on a seed that has no reference level runs the reference fix there (a graded run of its own, like
validation's), keeps its level, and every later grading on that seed reuses it. Validation measures the
seeds it runs on the same way, and the reference's own grading on a seed records its level.

The level is measured on the same backend as the fix (the container's memory under Docker, the ranks'
process trees locally): a level from one is never compared with the other's.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from labs.checks import MemoryGrowth, held_level
from labs.models import LabRun, ReferenceMemory
from labs.variant_runs import run_variant
from sandbox.judging import RunResult

MEMORY_CHECK = "memory_growth"
REFERENCE = "solution"
FAULTY = "baseline"


class ReferenceUnavailable(RuntimeError):
    """The reference fix could not be measured on this seed: a platform fault, never the candidate's."""


def memory_checks(checks: list[dict]) -> list[dict]:
    """The rendered checks that compare memory with the reference fix's."""
    return [check for check in checks if check["type"] == MEMORY_CHECK]


def reference_levels(
    lab_run: LabRun, result: RunResult, checks: list[dict], measuring: Callable[[], None] | None = None
) -> dict[str, float]:
    """{check name: the reference fix's held level in MiB} for ``lab_run``'s seed and memory source.

    The reference fix's own run records its levels here and is compared with them. Any other run gets the
    stored levels, after running the reference on this seed when some are missing (``measuring`` is told
    first: that takes as long as a run)."""
    checks = memory_checks(checks)
    source = result.memory_source
    if not checks or not source:
        return {}
    if lab_run.variant == REFERENCE:
        return record(lab_run, result, checks)
    levels = stored(lab_run, source)
    if all(check["name"] in levels for check in checks) or lab_run.variant == FAULTY:
        # The faulty program is judged against the reference where its level is known and by its growth
        # alone where not: validation runs it before the reference on each seed, and measuring the
        # reference for it would run the reference twice.
        return levels
    if measuring:
        measuring()
    # Executed here, by the worker grading the fix: it belongs to that worker like the fix's own run.
    reference = run_variant(
        lab_run.version, lab_run.seed, REFERENCE, worker_name=lab_run.run.worker or "grading",
        priority=lab_run.run.priority,  # the candidate waits for it: not background work
    )  # fmt: skip
    levels = stored(lab_run, source)
    missing = [check["name"] for check in checks if check["name"] not in levels]
    if missing:
        why = reference.run.error_message or reference.run.status
        raise ReferenceUnavailable(
            f"the reference fix's memory on seed {lab_run.seed} could not be measured for {', '.join(missing)} "
            f"(its run {reference.run_id} ended {why}); the fix is not graded without it"
        )
    return levels


def reference_level(result: RunResult, check: dict) -> float | None:
    """The level ``check`` judges in ``result`` (MiB): the highest held after that check's own warm-up."""
    return held_level(result, MemoryGrowth.warmup_cpu_s(check["options"]))


def stored(lab_run: LabRun, source: str) -> dict[str, float]:
    rows = ReferenceMemory.objects.filter(version_id=lab_run.version_id, seed=lab_run.seed, source=source)
    return {row.check_name: row.level_mib for row in rows}


def record(lab_run: LabRun, result: RunResult, checks: list[dict]) -> dict[str, float]:
    """Keep the reference run's levels: the highest measured on the seed, so a fix is compared with the
    most the reference itself needed there."""
    for check in checks:
        level = reference_level(result, check)
        if level is None:
            continue
        with transaction.atomic():
            row, created = ReferenceMemory.objects.select_for_update().get_or_create(
                version_id=lab_run.version_id, seed=lab_run.seed, source=result.memory_source,
                check_name=check["name"], defaults={"level_mib": round(level, 2), "lab_run": lab_run},
            )  # fmt: skip
            if not created and level > row.level_mib:
                ReferenceMemory.objects.filter(pk=row.pk).update(level_mib=round(level, 2), lab_run=lab_run)
    return stored(lab_run, result.memory_source)

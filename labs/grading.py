"""Grade a finished lab run by outcomes measured outside the candidate's process.

The worker calls :func:`grade_run` right after the run's container is gone. It reads
what the platform recorded (exit codes, deadline, memory samples taken by the
launcher, counters kept by the rank runtime), runs the lab's grader in a fresh
process on the saved weights and hidden data, applies the lab's checks, and stores
every check's measured value and threshold. A crash of the grader itself raises,
and the run ends ``error``: a platform fault, never counted against the candidate.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from labs.checks import Outcome, run_checks
from labs.flag_scan import static_flags
from labs.models import LabRun
from labs.render import choose_params, grader_seed
from sandbox.backends.base import safe_relative_path
from sandbox.models import Run, RunArtifact, RunEvent

GRADER_TIMEOUT_SECONDS = 120


class GraderFault(RuntimeError):
    """The lab's grader crashed or timed out: the platform's fault."""


def grade_run(run_id: int) -> bool:
    lab_run = LabRun.objects.select_related("version", "attempt", "run").get(run_id=run_id)
    run, spec = lab_run.run, lab_run.version.spec
    values = choose_params(spec["slug"], spec["params"], lab_run.seed)
    outcome = gather_outcome(run, baseline=lab_run.version.baseline)
    if any(check["type"] == "metric" for check in spec["checks"]):
        hidden_seed = grader_seed(spec["slug"], lab_run.seed, lab_run.grader_nonce)
        outcome.metrics, outcome.grader_error = evaluate_with_grader(spec, run, values, hidden_seed)
    results = run_checks(spec["checks"], outcome, values)
    passed = all(r.passed for r in results)
    fix_percent = round(100 * sum(r.passed for r in results) / len(results))
    with transaction.atomic():
        LabRun.objects.filter(pk=lab_run.pk).update(
            checks=[r.as_dict() for r in results],
            flags=static_flags(spec, run.files),
            # JSON (and PostgreSQL) has no NaN or infinity: those are kept as text.
            metrics={k: v if math.isfinite(v) else str(v) for k, v in outcome.metrics.items()}
            | ({"grader_error": outcome.grader_error} if outcome.grader_error else {}),
            passed=passed,
            fix_percent=fix_percent,
            graded_at=timezone.now(),
        )
        if lab_run.attempt_id:
            from labs.scoring import record_fix_result

            record_fix_result(lab_run.pk)
    return passed


def gather_outcome(run: Run, baseline: dict | None = None) -> Outcome:
    run.refresh_from_db()
    losses: list[float] = []
    memory: list[tuple[float, float]] = []
    latest_by_rank: dict[int, float] = {}
    counters: dict[tuple[int, str], float] = {}
    events = RunEvent.objects.filter(run=run, kind__in=("metric", "memory", "counter")).order_by("seq")
    for kind, rank, t, data in events.values_list("kind", "rank", "t", "data").iterator():
        if kind == "metric" and "loss" in data and data["loss"] is not None:
            value = _as_float(data["loss"])
            if value is not None:
                losses.append(value)
        elif kind == "memory":
            size = data.get("pss_bytes") or data.get("rss_bytes")
            # A rank caught while exiting reads as 0 bytes: not a measurement, and one such sample at
            # the end would flatten a leak's slope.
            if isinstance(size, (int, float)) and size > 0:
                latest_by_rank[rank] = float(size)
                memory.append((t, sum(latest_by_rank.values())))
        elif kind == "counter" and isinstance(data.get("name"), str):
            value = _as_float(data.get("value"))
            if value is not None:
                key = (rank, data["name"])
                counters[key] = max(counters.get(key, 0.0), value)
    totals: dict[str, float] = {}
    for (_, name), value in counters.items():
        totals[name] = totals.get(name, 0.0) + value
    end = RunEvent.objects.filter(run=run, kind="end").order_by("-seq").first()
    duration = end.data.get("duration") if end else run.duration_seconds
    return Outcome(
        ranks=run.ranks, exit_codes={str(k): v for k, v in (run.exit_codes or {}).items()},
        timed_out=run.timed_out, oom_killed=run.oom_killed,
        duration=float(duration) if isinstance(duration, (int, float)) else None,
        timeout_seconds=run.timeout_seconds, losses=losses, memory=memory, counters=totals,
        baseline=baseline or {},
    )  # fmt: skip


def _as_float(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def evaluate_with_grader(spec: dict, run: Run, values: dict, hidden_seed: int) -> tuple[dict, str]:
    """(metrics, candidate-facing reason they are missing). Raises GraderFault on a grader crash."""
    with tempfile.TemporaryDirectory(prefix="faultline-grade-") as folder:
        artifacts = Path(folder) / "artifacts"
        artifacts.mkdir()
        for name, content in RunArtifact.objects.filter(run=run).values_list("name", "content"):
            relative = safe_relative_path(name)
            if relative is None:
                continue
            target = artifacts / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(bytes(content))
        request = {
            "source": spec["grader_source"],
            "filename": f"labs/catalog/{spec['slug']}/grader.py",
            "artifacts": str(artifacts),
            "params": values,
            "seed": hidden_seed,
            "ranks": run.ranks,
        }
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(settings.BASE_DIR),
            "OMP_NUM_THREADS": "1",
            "HOME": folder,
            "LANG": "C.UTF-8",
        }
        try:
            done = subprocess.run(
                [sys.executable, "-m", "labs.grader_main"], input=json.dumps(request), capture_output=True,
                text=True, timeout=GRADER_TIMEOUT_SECONDS, cwd=folder, env=env,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise GraderFault(f"the grader of {spec['slug']} ran over {GRADER_TIMEOUT_SECONDS} s") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise GraderFault(f"the grader of {spec['slug']} crashed: {tail[:300]}")
    answer = json.loads(lines[-1])
    if "candidate_error" in answer:
        return {}, answer["candidate_error"]
    return {k: float(v) for k, v in answer["metrics"].items()}, ""

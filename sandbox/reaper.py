"""Clean up after dead workers: kill containers past their deadline, end lost runs as ``error``.

Runs when a worker starts and then periodically inside it. Lost runs are the
platform's fault and are never counted against a candidate.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from django.db import close_old_connections
from django.utils import timezone

from sandbox.models import Run

log = logging.getLogger(__name__)
GRACE = timedelta(seconds=60)
# Grading starts when the program has ended and may take the grader's whole time limit (120 s).
GRADING_ALLOWANCE = timedelta(seconds=180)
LOST_MESSAGE = "the worker running this stopped before it finished (platform fault; run it again)"


@dataclass
class ReapReport:
    containers_removed: list[str] = field(default_factory=list)
    runs_failed: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def reap(now=None, docker_client=None, restarted_worker: str | None = None, worker_started=None) -> ReapReport:
    """``restarted_worker``/``worker_started``: this worker's node name and start time, given once
    at worker start. Anything labelled with that name from before the start was left by its
    previous, dead incarnation and is cleaned up at once instead of after its deadline."""
    now = now or timezone.now()
    report = ReapReport()
    _reap_containers(now, report, docker_client, restarted_worker, worker_started)
    stale = Run.objects.filter(status__in=[Run.Status.STARTING, Run.Status.RUNNING, Run.Status.GRADING])
    for run in stale:
        started = run.started_at or run.status_changed_at
        limit = started + timedelta(seconds=run.timeout_seconds) + GRACE
        if run.status == Run.Status.GRADING:
            limit = max(limit, run.status_changed_at + GRADING_ALLOWANCE)
        orphaned = (
            restarted_worker is not None and run.worker == restarted_worker and run.status_changed_at < worker_started
        )
        if (orphaned or now > limit) and Run.transition(
            run.pk, [run.status], Run.Status.ERROR, error_message=LOST_MESSAGE
        ):
            report.runs_failed.append(run.pk)
    return report


def _reap_containers(now, report: ReapReport, client, restarted_worker: str | None, worker_started) -> None:
    try:
        import docker

        client = client or docker.from_env(timeout=10)
        containers = client.containers.list(all=True, filters={"label": "faultline.run"})
    except Exception:  # noqa: BLE001 - no engine on this worker: nothing to reap
        return
    active = set(Run.objects.filter(status__in=list(Run.ACTIVE)).values_list("pk", flat=True))
    for container in containers:
        labels = container.labels
        deadline = int(labels.get("faultline.deadline", "0") or 0)
        run_id = int(labels.get("faultline.run", "0") or 0)
        overdue = now.timestamp() > deadline + GRACE.total_seconds()
        orphaned = (
            restarted_worker is not None
            and labels.get("faultline.worker") == restarted_worker
            and int(labels.get("faultline.started", "0") or 0) < worker_started.timestamp()
        )
        if overdue or orphaned or run_id not in active:
            try:
                container.remove(force=True)
                report.containers_removed.append(container.short_id)
            except Exception:  # noqa: BLE001
                log.warning("could not remove container %s", container.short_id)
            if run_id in active and Run.transition(run_id, Run.ACTIVE, Run.Status.ERROR, error_message=LOST_MESSAGE):
                report.runs_failed.append(run_id)


def start_periodic(worker_name: str, interval: float = 60.0) -> threading.Thread:
    worker_started = timezone.now()

    def loop() -> None:
        first = True
        while True:
            try:
                if first:
                    result = reap(restarted_worker=worker_name, worker_started=worker_started)
                else:
                    result = reap()
                first = False
                if result.containers_removed or result.runs_failed:
                    log.warning("reaper: %s", result.as_dict())
            except Exception:
                log.exception("reaper failed")
            finally:
                close_old_connections()
            time.sleep(interval)

    thread = threading.Thread(target=loop, name="sandbox-reaper", daemon=True)
    thread.start()
    return thread

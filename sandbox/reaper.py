"""Clean up after dead workers: kill containers past their deadline, end lost runs as ``error``.

Runs when a worker starts and then periodically inside it. Lost runs are the
platform's fault and are never counted against a candidate.

Warm-pool containers (label ``faultline.pool``) carry no run label: they were made before their run.
One that was handed to a run is found through ``Run.container_id`` and treated like that run's own
container. An idle one is removed when its worker restarted, when the worker process that made it is
gone (same node as this worker only: pids mean nothing across hosts), or when it is past its deadline.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from django.db import close_old_connections
from django.utils import timezone

from sandbox import dispatch
from sandbox.instance import instance_filter
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


def reap(
    now=None,
    docker_client=None,
    restarted_worker: str | None = None,
    worker_started=None,
    this_worker: str | None = None,
) -> ReapReport:
    """``restarted_worker``/``worker_started``: this worker's node name and start time, given once
    at worker start. Anything labelled with that name from before the start was left by its
    previous, dead incarnation and is cleaned up at once instead of after its deadline.
    ``this_worker`` (the periodic passes): the node name whose exited processes' pool containers go."""
    now = now or timezone.now()
    report = ReapReport()
    _reap_containers(now, report, docker_client, restarted_worker, worker_started, this_worker or restarted_worker)
    stale = Run.objects.filter(status__in=[Run.Status.STARTING, Run.Status.RUNNING, Run.Status.GRADING])
    for run in stale:
        started = run.started_at or run.status_changed_at
        limit = started + timedelta(seconds=run.timeout_seconds) + GRACE
        if run.deadline_at is not None:
            limit = max(limit, run.deadline_at + GRACE)  # moved on by the worker while the run was paused
        if run.status == Run.Status.GRADING:
            # A judge may run one more program of the same length first (labs measures its reference fix once
            # per seed).
            limit = max(limit, run.status_changed_at + GRADING_ALLOWANCE + timedelta(seconds=run.timeout_seconds))
        orphaned = (
            restarted_worker is not None and run.worker == restarted_worker and run.status_changed_at < worker_started
        )
        if orphaned or now > limit:
            _mark_lost(run.pk, [run.status], report)
    if report.runs_failed:
        # A lost run held a slot of its owner's share: runs of theirs waiting behind it may start now.
        for queue in set(Run.objects.filter(pk__in=report.runs_failed).values_list("queue", flat=True)):
            if dispatch.has_waiting(queue):
                dispatch.wake(queue)
    return report


def _reap_containers(
    now, report: ReapReport, client, restarted_worker: str | None, worker_started, this_worker: str | None
) -> None:
    try:
        import docker

        client = client or docker.from_env(timeout=10)
        # ignore_removed: a container removed between the listing and its inspection is simply not listed.
        # Only this installation's containers: another one on the same engine has runs we do not know.
        containers = client.containers.list(all=True, filters=instance_filter("faultline.run"), ignore_removed=True)
        pooled = client.containers.list(all=True, filters=instance_filter("faultline.pool"), ignore_removed=True)
    except Exception:  # noqa: BLE001 - no engine on this worker: nothing to reap
        return
    active = dict(Run.objects.filter(status__in=list(Run.ACTIVE)).values_list("pk", "deadline_at"))
    for container in containers:
        labels = container.labels
        deadline = int(labels.get("faultline.deadline", "0") or 0)
        run_id = int(labels.get("faultline.run", "0") or 0)
        if active.get(run_id) is not None:
            # A label cannot change; the run's deadline moves on while it is paused.
            deadline = max(deadline, int(active[run_id].timestamp()))
        overdue = now.timestamp() > deadline + GRACE.total_seconds()
        orphaned = _left_by_dead_incarnation(labels, restarted_worker, worker_started)
        if overdue or orphaned or run_id not in active:
            _remove(container, report)
            if run_id in active:
                _mark_lost(run_id, Run.ACTIVE, report)
    if pooled:
        _reap_pool(now, report, pooled, restarted_worker, worker_started, this_worker)


def _reap_pool(
    now, report: ReapReport, containers: list, restarted_worker: str | None, worker_started, this_worker: str | None
) -> None:
    ids = [c.id for c in containers]
    runs = {
        container_id: (pk, status, deadline_at)
        for pk, status, deadline_at, container_id in Run.objects.filter(container_id__in=ids).values_list(
            "pk", "status", "deadline_at", "container_id"
        )
    }
    for container in containers:
        labels = container.labels
        orphaned = _left_by_dead_incarnation(labels, restarted_worker, worker_started)
        if container.id in runs:  # handed to a run: it lives and dies with that run
            run_id, status, deadline_at = runs[container.id]
            active = status in Run.ACTIVE
            overdue = deadline_at is not None and now > deadline_at + GRACE
            if orphaned or overdue or not active:
                _remove(container, report)
                if active:
                    _mark_lost(run_id, Run.ACTIVE, report)
            continue
        deadline = int(labels.get("faultline.deadline", "0") or 0)
        overdue = now.timestamp() > deadline + GRACE.total_seconds()
        if overdue or orphaned or _maker_gone(labels, this_worker):
            _remove(container, report)


def _mark_lost(run_id: int, from_statuses, report: ReapReport) -> None:
    # Conditional: a run that finished meanwhile keeps its result.
    if Run.transition(run_id, from_statuses, Run.Status.ERROR, error_message=LOST_MESSAGE):
        report.runs_failed.append(run_id)


def _left_by_dead_incarnation(labels: dict, restarted_worker: str | None, worker_started) -> bool:
    # Labels hold whole seconds: compare with the start's whole second, so that a container this very
    # incarnation made in its first second is never mistaken for its predecessor's.
    return (
        restarted_worker is not None
        and labels.get("faultline.worker") == restarted_worker
        and int(labels.get("faultline.started", "0") or 0) < int(worker_started.timestamp())
    )


def _maker_gone(labels: dict, this_worker: str | None) -> bool:
    """An idle pool container of this worker whose process has exited (a recycled prefork child)."""
    if this_worker is None or labels.get("faultline.worker") != this_worker:
        return False
    try:
        os.kill(int(labels.get("faultline.pid", "0") or 0), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError, OverflowError):
        return False
    return False


def _remove(container, report: ReapReport) -> None:
    try:
        container.remove(force=True)
        report.containers_removed.append(container.short_id)
    except Exception:  # noqa: BLE001
        log.warning("could not remove container %s", container.short_id)


def start_periodic(worker_name: str, interval: float = 60.0, worker_started=None) -> threading.Thread:
    """``worker_started``: when this worker incarnation began (before it made any container); now if not given."""
    worker_started = worker_started or timezone.now()

    def loop() -> None:
        first = True
        while True:
            try:
                if first:
                    result = reap(restarted_worker=worker_name, worker_started=worker_started)
                else:
                    result = reap(this_worker=worker_name)
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

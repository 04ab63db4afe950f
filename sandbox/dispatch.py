"""Which queued run a free worker slot takes next: fair between users, with priorities.

Celery delivers one task per run, but a task does not insist on its own run: it takes the *fairest* queued
run of its queue at the moment a slot is free. The order is

1. priority: interview runs, then practice and graded fixes, then lab validation (background work);
2. owners with the fewest runs already starting or running (so one user's backlog never sits in front of
   another user's first run);
3. age.

A user's run is not started while that user already has ``SANDBOX_MAX_ACTIVE_PER_USER`` runs starting or
running: five long runs from one candidate occupy one slot, not every slot. A task that finds nothing it
may start returns at once; whenever a run ends, the runner sends its queue a wake-up (``wake``), so a run
held back by its owner's cap starts as soon as that owner's earlier run ends. Runs without an owner
(validation, ``gradefix``) are never capped. The claim itself stays the conditional ``queued → starting``
UPDATE, so two slots racing for one run start it once.
"""

from __future__ import annotations

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from sandbox.models import Run

BUSY = (Run.Status.STARTING, Run.Status.RUNNING)
EXECUTE_TASK = "sandbox.execute_run"
SCAN_LIMIT = 500  # queued runs looked at per decision; a longer queue is served in age order past that


def fair_queue(queue: str) -> list[tuple[int, int | None]]:
    """(run id, owner id) of the queued runs of ``queue`` in the order slots should take them, the runs that
    may start now first."""
    busy = (
        Run.objects.filter(owner=OuterRef("owner"), status__in=BUSY).values("owner").annotate(n=Count("pk")).values("n")
    )
    queued = (
        Run.objects.filter(queue=queue, status=Run.Status.QUEUED)
        .annotate(owner_busy=Coalesce(Subquery(busy, output_field=IntegerField()), Value(0)))
        .order_by("priority", "owner_busy", "created_at", "pk")
        .values_list("pk", "owner_id", "owner_busy")[:SCAN_LIMIT]
    )
    cap = settings.SANDBOX_MAX_ACTIVE_PER_USER
    ready, held = [], []
    for pk, owner, owner_busy in queued:
        (held if owner is not None and owner_busy >= cap else ready).append((pk, owner))
    return ready + held


def claim(run_id: int, owner_id: int | None, hostname: str) -> bool:
    """Move the run ``queued → starting`` for this worker, unless its owner is already at the cap. The owner's
    row is locked meanwhile (PostgreSQL), so two slots cannot both start a run of one owner past the cap."""
    with transaction.atomic():
        if owner_id is not None:
            list(get_user_model().objects.select_for_update().filter(pk=owner_id).values_list("pk"))
            if Run.objects.filter(owner_id=owner_id, status__in=BUSY).count() >= settings.SANDBOX_MAX_ACTIVE_PER_USER:
                return False
        return Run.transition(run_id, [Run.Status.QUEUED], Run.Status.STARTING, worker=hostname)


def wake(queue: str) -> None:
    """Ask a free slot of ``queue`` to look at the queue again (a task without a run of its own)."""
    # By name: the task module sits above this one (it imports the runner, which imports this).
    current_app.send_task(EXECUTE_TASK, kwargs={"queue": queue}, queue=queue)


def queue_position(run: Run) -> int | None:
    """How many queued runs will start before this one (0: next); None once it has left the queue."""
    if run.status != Run.Status.QUEUED:
        return None
    order = [pk for pk, _ in fair_queue(run.queue)]
    if run.pk in order:
        return order.index(run.pk)
    return Run.objects.filter(queue=run.queue, status=Run.Status.QUEUED, created_at__lt=run.created_at).count()


def has_waiting(queue: str) -> bool:
    return Run.objects.filter(queue=queue, status=Run.Status.QUEUED).exists()


def queued_for(owner) -> int:
    return Run.objects.filter(owner=owner, status=Run.Status.QUEUED).count()

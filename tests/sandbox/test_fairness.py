"""Fair queueing: one user's backlog never stands in front of another user's run.

Unit tests of the order a free slot takes runs in (``sandbox.dispatch``), the per-user limits at the API,
and one real-worker test: five spinning runs from one user beside one quick run from another.
"""

from __future__ import annotations

import uuid
from unittest import mock

import pytest
from django.contrib.auth import get_user_model

from sandbox import dispatch, services
from sandbox.models import Run
from tests.sandbox.helpers import start_worker, wait_for

SPIN = "while True:\n    pass\n"
QUICK = "print('quick')\n"


def user(name: str):
    return get_user_model().objects.create_user(username=f"{name}-{uuid.uuid4().hex[:6]}", password="x")


def queued(owner, priority=Run.Priority.PRACTICE, **fields) -> Run:
    return Run.objects.create(owner=owner, files={"main.py": QUICK}, priority=priority, **fields)


@pytest.mark.django_db
def test_a_users_backlog_waits_behind_another_users_first_run(settings):
    settings.SANDBOX_MAX_ACTIVE_PER_USER = 1
    a, b = user("a"), user("b")
    Run.objects.create(owner=a, files={"main.py": SPIN}, status=Run.Status.RUNNING)
    backlog = [queued(a) for _ in range(4)]
    late = queued(b)  # the newest run of all
    order = [pk for pk, _ in dispatch.fair_queue("cpu")]
    assert order[0] == late.pk  # b has nothing running: b goes first
    assert order[1:] == [r.pk for r in backlog]  # a's runs are held: a is at its share
    assert dispatch.queue_position(late) == 0 and dispatch.queue_position(backlog[0]) == 1
    assert not dispatch.claim(backlog[0].pk, a.pk, "w")  # a's share is used: not even a direct claim
    assert dispatch.claim(late.pk, b.pk, "w")
    assert Run.objects.get(pk=late.pk).status == Run.Status.STARTING


@pytest.mark.django_db
def test_interview_runs_go_first_and_validation_last(settings):
    a, b, c = user("a"), user("b"), user("c")
    validation = queued(None, Run.Priority.VALIDATION)
    practice = queued(a)
    interview = queued(b, Run.Priority.INTERVIEW)
    later_practice = queued(c)
    order = [pk for pk, _ in dispatch.fair_queue("cpu")]
    assert order == [interview.pk, practice.pk, later_practice.pk, validation.pk]
    assert services.create_run(owner=None, files={"main.py": QUICK}, purpose="validate", enqueue=False).priority == (
        Run.Priority.VALIDATION
    )


@pytest.mark.django_db
def test_runs_without_an_owner_are_never_held(settings):
    settings.SANDBOX_MAX_ACTIVE_PER_USER = 1
    Run.objects.create(owner=None, files={"main.py": SPIN}, status=Run.Status.RUNNING)
    mine = queued(None, Run.Priority.VALIDATION)
    assert dispatch.claim(mine.pk, None, "w")


@pytest.mark.django_db
def test_one_waiting_run_per_user_at_the_api(login, author, settings):
    settings.SANDBOX_MAX_QUEUED_PER_USER = 1
    client = login(author)
    body = {"files": {"main.py": QUICK}}
    with mock.patch("sandbox.services.enqueue_run"):
        assert client.post("/api/sandbox/runs/", body, content_type="application/json").status_code == 201
        refused = client.post("/api/sandbox/runs/", body, content_type="application/json")
    assert refused.status_code == 400
    assert "already have 1 run(s) waiting to start" in str(refused.json())
    assert Run.objects.filter(owner=author).count() == 1


@pytest.mark.worker
@pytest.mark.docker
@pytest.mark.django_db(transaction=True)
def test_five_spinning_runs_of_one_user_do_not_delay_another_users_quick_run(settings, tmp_path):
    """Two worker slots. User a queues five runs that spin until their deadline; then user b queues a run
    that prints one line. b's run must start within seconds, not after a's runs."""
    settings.SANDBOX_BACKEND = "docker"
    settings.SANDBOX_MAX_QUEUED_PER_USER = 5  # as if a's runs came from five labs at once
    a, b = user("spinner"), user("quick")
    workers = [start_worker(f"fair{i}-{uuid.uuid4().hex[:6]}@%h", tmp_path / f"w{i}.log", pool_size=0)
               for i in range(2)]  # fmt: skip
    try:
        for _ in range(5):
            services.create_run(owner=a, files={"main.py": SPIN}, timeout_seconds=90)
        wait_for(lambda: Run.objects.filter(owner=a, status=Run.Status.RUNNING).exists(), 120, "a's first run")
        quick = services.create_run(owner=b, files={"main.py": QUICK}, timeout_seconds=60)
        wait_for(lambda: Run.objects.get(pk=quick.pk).status in Run.TERMINAL, 60, "b's quick run to finish")
        quick.refresh_from_db()
        waited = (quick.started_at - quick.created_at).total_seconds()
        assert quick.status == Run.Status.PASSED, quick.error_message
        assert waited < 20, f"b's run waited {waited:.1f} s behind a's backlog"
        busy = Run.objects.filter(owner=a, status__in=[Run.Status.STARTING, Run.Status.RUNNING]).count()
        assert busy == 1, "a holds one slot, never both"
        assert Run.objects.filter(owner=a, status=Run.Status.QUEUED).count() == 4
        # a's next run starts as soon as a's running one ends (a wake-up, not a 90 s wait).
        running = Run.objects.get(owner=a, status=Run.Status.RUNNING)
        services.cancel_run(running)
        wait_for(
            lambda: Run.objects.filter(owner=a, status=Run.Status.RUNNING).exclude(pk=running.pk).exists(),
            60, "a's next run to start after the first was cancelled",
        )  # fmt: skip
    finally:
        for run in Run.objects.filter(owner=a):
            services.cancel_run(run)
        wait_for(lambda: not Run.objects.filter(status__in=list(Run.ACTIVE)).exists(), 90, "every run to end")
        for worker in workers:
            worker.terminate()
            worker.wait(timeout=60)

"""Worker start-up hooks: reap what this worker's previous (dead) incarnation left, then keep reaping;
start the warm container pool in every process that executes runs, and empty it when that process ends.
Apps above the sandbox add their own per-process set-up with ``on_run_process`` (labs: a standby grader)."""

from collections.abc import Callable

from celery.signals import celeryd_init, worker_process_init, worker_process_shutdown, worker_ready, worker_shutdown
from django.utils import timezone

_worker: dict = {"node": None, "started": None}
_process_hooks: list[tuple[Callable[[str], None], Callable[[], None]]] = []


def on_run_process(start: Callable[[str], None], stop: Callable[[], None]) -> None:
    """``start(node)`` in every worker process that executes runs, after its warm pool starts; ``stop()`` as
    that process ends."""
    _process_hooks.append((start, stop))


def _start_process(node: str) -> None:
    from sandbox.backends import warm_pool as pool

    pool.start_pool(node)
    for start, _ in _process_hooks:
        start(node)


@celeryd_init.connect
def remember_worker(sender=None, **kwargs) -> None:
    # Before the prefork pool forks its children: the reaper treats containers labelled with this node
    # and started before this moment as left by a dead predecessor, so it must precede every pool container.
    _worker.update(node=sender, started=timezone.now())


@worker_ready.connect
def start_reaper(sender=None, **kwargs) -> None:
    from sandbox import reaper

    # sender is the worker's consumer; its hostname is the node name runs are labelled with.
    reaper.start_periodic(worker_name=sender.hostname, worker_started=_worker["started"])
    if not _runs_in_children(sender):
        _start_process(sender.hostname)  # solo or threads pool: this process executes the runs


@worker_process_init.connect
def start_child_pool(**kwargs) -> None:
    if _worker["node"]:
        _start_process(_worker["node"])


@worker_process_shutdown.connect
@worker_shutdown.connect
def stop_pool(**kwargs) -> None:
    from sandbox.backends import warm_pool as pool

    pool.stop_pool()
    for _, stop in _process_hooks:
        stop()


def _runs_in_children(consumer) -> bool:
    return type(getattr(consumer, "pool", None)).__module__.endswith(".prefork")

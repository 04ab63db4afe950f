"""Worker start-up hooks: reap what this worker's previous (dead) incarnation left, then keep reaping;
start the warm container pool in every process that executes runs, and empty it when that process ends."""

from celery.signals import celeryd_init, worker_process_init, worker_process_shutdown, worker_ready, worker_shutdown
from django.utils import timezone

_worker: dict = {"node": None, "started": None}


@celeryd_init.connect
def remember_worker(sender=None, **kwargs) -> None:
    # Before the prefork pool forks its children: the reaper treats containers labelled with this node
    # and started before this moment as left by a dead predecessor, so it must precede every pool container.
    _worker.update(node=sender, started=timezone.now())


@worker_ready.connect
def start_reaper(sender=None, **kwargs) -> None:
    from sandbox import reaper
    from sandbox.backends import warm_pool as pool

    # sender is the worker's consumer; its hostname is the node name runs are labelled with.
    reaper.start_periodic(worker_name=sender.hostname, worker_started=_worker["started"])
    if not _runs_in_children(sender):
        pool.start_pool(sender.hostname)  # solo or threads pool: this process executes the runs


@worker_process_init.connect
def start_child_pool(**kwargs) -> None:
    from sandbox.backends import warm_pool as pool

    if _worker["node"]:
        pool.start_pool(_worker["node"])


@worker_process_shutdown.connect
@worker_shutdown.connect
def stop_pool(**kwargs) -> None:
    from sandbox.backends import warm_pool as pool

    pool.stop_pool()


def _runs_in_children(consumer) -> bool:
    return type(getattr(consumer, "pool", None)).__module__.endswith(".prefork")

"""Worker start-up hooks: reap what this worker's previous (dead) incarnation left, then keep reaping."""

from celery.signals import worker_ready


@worker_ready.connect
def start_reaper(sender=None, **kwargs) -> None:
    from sandbox import reaper

    # sender is the worker's consumer; its hostname is the node name runs are labelled with.
    reaper.start_periodic(worker_name=sender.hostname)

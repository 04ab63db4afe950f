"""Worker start-up hooks: reap what a previous (dead) worker left, then keep reaping."""

from celery.signals import worker_ready


@worker_ready.connect
def start_reaper(sender=None, **kwargs) -> None:
    from sandbox import reaper

    reaper.start_periodic()

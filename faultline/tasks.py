"""Platform-level tasks. ``ping`` proves a round trip web → broker → worker → database."""

from __future__ import annotations

from celery import shared_task

from faultline.models import WorkerPing


def record_ping(token: str, hostname: str) -> WorkerPing:
    ping, _ = WorkerPing.objects.update_or_create(token=token, defaults={"hostname": hostname})
    return ping


@shared_task(name="faultline.ping", bind=True)
def ping(self, token: str) -> None:
    record_ping(token, self.request.hostname or "unknown")

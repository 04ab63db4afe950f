"""The Celery application. Workers start with ``celery -A faultline worker``."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faultline.settings")

app = Celery("faultline")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

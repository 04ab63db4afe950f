"""Readiness checks shared by /readyz and ``manage.py preflight``.

Each check returns (ok, detail) and never raises: a failing dependency must be
reported by name, not turned into a 500.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection

from core.envparse import redact_url
from core.errortext import first_line
from faultline.transports import import_transport, transport_module


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str

    def as_dict(self) -> dict:
        return {"ok": self.ok, "detail": self.detail}


def check_database() -> CheckResult:
    db = settings.DATABASES["default"]
    where = (
        db["NAME"]
        if "sqlite" in db["ENGINE"]
        else f"PostgreSQL at {db['HOST'] or 'local socket'}:{db['PORT'] or 5432}/{db['NAME']}"
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001
        return CheckResult(
            "database",
            False,
            f"cannot use {where}: {first_line(exc)} — check DATABASE_URL and that the server is running",
        )
    return CheckResult("database", True, f"{where} answers")


def check_broker() -> CheckResult:
    url = settings.CELERY_BROKER_URL
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    try:
        import_transport(url)
    except ImportError as exc:
        return CheckResult(
            "broker",
            False,
            f"the {transport_module(url)} transport cannot load: {first_line(exc)} — reinstall requirements.txt",
        )
    if url == "filesystem://":
        folder = Path(options["data_folder_in"])
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            return CheckResult(
                "broker",
                False,
                f"filesystem broker folder {folder} is missing or not writable — check CELERY_BROKER_URL",
            )
        return CheckResult("broker", True, f"filesystem broker at {folder.parent}")
    from kombu import Connection

    safe = redact_url(url)
    try:
        with Connection(url, connect_timeout=3, transport_options=options) as conn:
            conn.ensure_connection(max_retries=1, timeout=3)
    except Exception as exc:  # noqa: BLE001
        return CheckResult(
            "broker",
            False,
            f"cannot reach {safe}: {first_line(exc)} — check CELERY_BROKER_URL and that the broker is running",
        )
    return CheckResult("broker", True, f"{safe} answers")


def check_sandbox() -> CheckResult:
    from sandbox.selection import choose_backend

    choice = choose_backend()
    return CheckResult("sandbox", choice.ok, f"{choice.name}: {choice.detail}")


def run_checks() -> list[CheckResult]:
    return [check_database(), check_broker(), check_sandbox()]

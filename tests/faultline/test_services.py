"""The platform's readiness checks against the real PostgreSQL and Redis that
.ci/run starts (scripts/start-services.sh does the same on a dev machine)."""

from __future__ import annotations

import os

import pytest

from core.envparse import parse_database_url
from faultline.health import check_broker

pytestmark = pytest.mark.services

DB_URL = os.environ.get("FAULTLINE_TEST_DATABASE_URL")
REDIS_URL = os.environ.get("FAULTLINE_TEST_REDIS_URL")
needs_services = pytest.mark.skipif(
    not (DB_URL and REDIS_URL) and os.environ.get("FAULTLINE_REQUIRE_SERVICES") != "1",
    reason="FAULTLINE_TEST_DATABASE_URL / FAULTLINE_TEST_REDIS_URL not set (scripts/start-services.sh prints them)",
)


@needs_services
def test_redis_broker_check_passes(settings):
    settings.CELERY_BROKER_URL = REDIS_URL
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    result = check_broker()
    assert result.ok, result.detail


@needs_services
def test_postgres_answers_with_the_configured_url():
    import psycopg

    cfg = parse_database_url("FAULTLINE_TEST_DATABASE_URL", DB_URL, base_dir=None)
    with psycopg.connect(
        host=cfg.host, port=cfg.port, user=cfg.user, password=cfg.password, dbname=cfg.name, connect_timeout=5
    ) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)

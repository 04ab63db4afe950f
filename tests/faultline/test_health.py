import pytest


def test_healthz_needs_nothing(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_reports_each_dependency(client, settings):
    settings.SANDBOX_BACKEND = "process"
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["failed"] == []
    assert set(body["checks"]) == {"database", "broker", "sandbox"}
    assert all(check["ok"] for check in body["checks"].values())


@pytest.mark.django_db
def test_readyz_names_an_unreachable_broker(client, settings):
    settings.SANDBOX_BACKEND = "process"
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["broker"]
    assert "redis://127.0.0.1:9/0" in body["checks"]["broker"]["detail"]


@pytest.mark.django_db
def test_readyz_names_a_missing_docker_engine(client, settings, monkeypatch, tmp_path):
    settings.SANDBOX_BACKEND = "docker"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["sandbox"]
    assert "no Docker engine answers" in body["checks"]["sandbox"]["detail"]
    # The web itself stays up.
    assert client.get("/").status_code == 200


def test_readyz_names_a_broken_database(client, settings, monkeypatch):
    from django.db import connection

    def broken_cursor(*args, **kwargs):
        raise RuntimeError("database is gone")

    settings.SANDBOX_BACKEND = "process"
    monkeypatch.setattr(connection, "cursor", broken_cursor)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["failed"] == ["database"]
    assert "database is gone" in response.json()["checks"]["database"]["detail"]

from pathlib import Path

import pytest

from core.envparse import (
    ConfigError,
    env_bool,
    env_choice,
    env_int,
    env_list,
    parse_broker_url,
    parse_database_url,
)

BASE = Path("/srv/faultline")


@pytest.mark.parametrize("raw,expected", [("1", True), ("TRUE", True), ("yes", True), ("off", False), ("0", False)])
def test_bool_accepts_common_spellings(raw, expected):
    assert env_bool("DEBUG", default=not expected, environ={"DEBUG": raw}) is expected


def test_bool_default_when_unset_or_blank():
    assert env_bool("DEBUG", default=True, environ={}) is True
    assert env_bool("DEBUG", default=False, environ={"DEBUG": "  "}) is False


def test_bool_rejects_other_words_naming_the_variable():
    with pytest.raises(ConfigError) as err:
        env_bool("DEBUG", default=True, environ={"DEBUG": "maybe"})
    assert str(err.value).startswith("DEBUG: ")
    assert "'maybe'" in str(err.value)


def test_int_bounds():
    assert env_int("N", 5, minimum=1, environ={"N": "7"}) == 7
    with pytest.raises(ConfigError, match="N: expected a whole number"):
        env_int("N", 5, environ={"N": "7s"})
    with pytest.raises(ConfigError, match="N: must be at least 1"):
        env_int("N", 5, minimum=1, environ={"N": "0"})


def test_choice_and_list():
    assert env_choice("SANDBOX_BACKEND", "auto", ("auto", "docker"), environ={"SANDBOX_BACKEND": "Docker"}) == "docker"
    with pytest.raises(ConfigError, match="expected one of auto, docker"):
        env_choice("SANDBOX_BACKEND", "auto", ("auto", "docker"), environ={"SANDBOX_BACKEND": "kvm"})
    assert env_list("ALLOWED_HOSTS", [], environ={"ALLOWED_HOSTS": "a.test, b.test"}) == ["a.test", "b.test"]
    with pytest.raises(ConfigError, match="ALLOWED_HOSTS"):
        env_list("ALLOWED_HOSTS", [], environ={"ALLOWED_HOSTS": "a.test,,b.test"})


def test_database_url_sqlite_relative_and_absolute():
    assert parse_database_url("DATABASE_URL", "sqlite:///var/db.sqlite3", BASE).name == "/srv/faultline/var/db.sqlite3"
    assert parse_database_url("DATABASE_URL", "sqlite:////tmp/db.sqlite3", BASE).name == "/tmp/db.sqlite3"


def test_database_url_postgres_parts():
    cfg = parse_database_url("DATABASE_URL", "postgres://fl:s%40cret@db.local:5433/faultline?sslmode=require", BASE)
    assert (cfg.engine, cfg.user, cfg.password, cfg.host, cfg.port, cfg.name) == (
        "django.db.backends.postgresql",
        "fl",
        "s@cret",
        "db.local",
        "5433",
        "faultline",
    )
    assert cfg.options == {"sslmode": "require"}


@pytest.mark.parametrize(
    "url,fragment",
    [
        ("mysql://u@h/db", "unsupported scheme 'mysql'"),
        ("postgres://u:pw@h:5432/", "needs a database name"),
        ("postgres://u:pw@h:port/db", "port is not a number"),
        ("sqlite://", "needs a file path"),
    ],
)
def test_database_url_errors(url, fragment):
    with pytest.raises(ConfigError) as err:
        parse_database_url("DATABASE_URL", url, BASE)
    assert fragment in str(err.value)
    assert "pw" not in str(err.value), "passwords must not be echoed in errors"


def test_broker_urls():
    url, options = parse_broker_url("CELERY_BROKER_URL", "filesystem:///var/broker", BASE)
    assert url == "filesystem://"
    assert options["data_folder_in"] == "/srv/faultline/var/broker/queue"
    assert parse_broker_url("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0", BASE) == ("redis://127.0.0.1:6379/0", {})
    with pytest.raises(ConfigError, match="unsupported scheme 'ftp'"):
        parse_broker_url("CELERY_BROKER_URL", "ftp://x", BASE)
    with pytest.raises(ConfigError, match="needs a host"):
        parse_broker_url("CELERY_BROKER_URL", "redis:///0", BASE)

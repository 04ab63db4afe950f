"""Strict parsers for settings read from the environment.

Every parser raises ConfigError naming the variable, the bad value and what is
accepted, so a typo stops start-up with one actionable line instead of a
platform that half-works.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


class ConfigError(Exception):
    """A setting from the environment is invalid; str() is a one-line message."""

    def __init__(self, variable: str, problem: str) -> None:
        self.variable = variable
        super().__init__(f"{variable}: {problem}")


def _raw(name: str, environ: dict[str, str] | None) -> str | None:
    env = os.environ if environ is None else environ
    value = env.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_bool(name: str, default: bool, environ: dict[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in TRUE_WORDS:
        return True
    if lowered in FALSE_WORDS:
        return False
    raise ConfigError(name, f"expected true/false (or 1/0, yes/no, on/off), got {value!r}")


def env_int(
    name: str,
    default: int,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: dict[str, str] | None = None,
) -> int:
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(name, f"expected a whole number, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise ConfigError(name, f"must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ConfigError(name, f"must be at most {maximum}, got {number}")
    return number


def env_choice(name: str, default: str, choices: tuple[str, ...], environ: dict[str, str] | None = None) -> str:
    value = _raw(name, environ)
    if value is None:
        return default
    if value.lower() not in choices:
        raise ConfigError(name, f"expected one of {', '.join(choices)}, got {value!r}")
    return value.lower()


def env_list(name: str, default: list[str], environ: dict[str, str] | None = None) -> list[str]:
    value = _raw(name, environ)
    if value is None:
        return list(default)
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise ConfigError(name, f"expected a comma-separated list without empty items, got {value!r}")
    return items


def env_str(name: str, default: str | None = None, environ: dict[str, str] | None = None) -> str | None:
    value = _raw(name, environ)
    return default if value is None else value


@dataclass(frozen=True)
class DatabaseConfig:
    engine: str
    name: str
    user: str = ""
    password: str = ""
    host: str = ""
    port: str = ""
    options: dict[str, str] | None = None

    def as_django(self) -> dict:
        config = {
            "ENGINE": self.engine,
            "NAME": self.name,
            "USER": self.user,
            "PASSWORD": self.password,
            "HOST": self.host,
            "PORT": self.port,
            "OPTIONS": dict(self.options or {}),
        }
        if self.engine.endswith("sqlite3"):
            # A file test database lets a real worker process see committed rows; the pid keeps
            # two test sessions on one machine from deleting each other's database.
            config["TEST"] = {"NAME": str(Path(self.name).with_suffix(f".test-{os.getpid()}.sqlite3"))}
            config["OPTIONS"].setdefault("timeout", 20)
            # WAL lets web requests read while the worker writes run output.
            config["OPTIONS"].setdefault("init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            config["OPTIONS"].setdefault("transaction_mode", "IMMEDIATE")
        else:
            config["CONN_MAX_AGE"] = 60
            config["CONN_HEALTH_CHECKS"] = True
            config["OPTIONS"].setdefault("connect_timeout", 5)
        return config


def parse_database_url(name: str, value: str, base_dir: Path) -> DatabaseConfig:
    """Accepts sqlite:///relative/or/absolute/path and postgres(ql)://user:pass@host:port/db."""
    parts = urlsplit(value)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        path = unquote(parts.path)
        if parts.netloc:
            raise ConfigError(name, f"sqlite URLs take no host: use sqlite:///path/to/file.sqlite3, got {value!r}")
        if path.startswith("//"):
            file_path = Path(path[1:])
        elif path.startswith("/") and len(path) > 1:
            file_path = base_dir / path[1:]
        else:
            raise ConfigError(
                name, f"sqlite URL needs a file path, e.g. sqlite:///var/faultline.sqlite3, got {value!r}"
            )
        return DatabaseConfig(engine="django.db.backends.sqlite3", name=str(file_path))
    if scheme in {"postgres", "postgresql", "pgsql"}:
        db_name = unquote(parts.path.lstrip("/"))
        if not db_name:
            raise ConfigError(name, f"PostgreSQL URL needs a database name after the host, got {redact_url(value)!r}")
        try:
            port = parts.port
        except ValueError:
            raise ConfigError(name, f"port is not a number in {redact_url(value)!r}") from None
        return DatabaseConfig(
            engine="django.db.backends.postgresql",
            name=db_name,
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            host=unquote(parts.hostname or ""),
            port=str(port or ""),
            options=dict(parse_qsl(parts.query)),
        )
    raise ConfigError(name, f"unsupported scheme {scheme or '(none)'!r}: use sqlite:/// or postgres://")


def parse_broker_url(name: str, value: str, base_dir: Path) -> tuple[str, dict]:
    """Returns (broker_url, transport_options) for filesystem://, redis(s):// or amqp(s)://."""
    parts = urlsplit(value)
    scheme = parts.scheme.lower()
    if scheme == "filesystem":
        path = unquote(parts.path)
        if not path or path == "/":
            raise ConfigError(name, f"filesystem broker needs a folder, e.g. filesystem:///var/broker, got {value!r}")
        folder = Path(path[1:]) if path.startswith("//") else base_dir / path.lstrip("/")
        queue_dir = folder / "queue"
        return "filesystem://", {
            "data_folder_in": str(queue_dir),
            "data_folder_out": str(queue_dir),
            "control_folder": str(folder / "control"),
            "store_processed": False,
        }
    if scheme in {"redis", "rediss", "amqp", "amqps", "pyamqp"}:
        if not parts.hostname:
            raise ConfigError(name, f"{scheme} URL needs a host, got {redact_url(value)!r}")
        try:
            parts.port  # noqa: B018 - validates the port
        except ValueError:
            raise ConfigError(name, f"port is not a number in {redact_url(value)!r}") from None
        return value, {}
    raise ConfigError(name, f"unsupported scheme {scheme or '(none)'!r}: use filesystem://, redis:// or amqp://")


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return parts._replace(netloc=netloc).geturl()
    return url

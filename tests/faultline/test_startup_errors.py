"""Bad configuration stops start-up with one actionable line, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=full_env, capture_output=True, text=True, timeout=60
    )


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize(
    "env,variable,fragment",
    [
        ({"DEBUG": "maybe"}, "DEBUG", "'maybe'"),
        ({"DATABASE_URL": "mysql://root@127.0.0.1/x"}, "DATABASE_URL", "unsupported scheme 'mysql'"),
        ({"CELERY_BROKER_URL": "ftp://127.0.0.1/"}, "CELERY_BROKER_URL", "unsupported scheme 'ftp'"),
        ({"SANDBOX_BACKEND": "kvm"}, "SANDBOX_BACKEND", "expected one of auto, docker, process"),
        ({"DEBUG": "false", "SECRET_KEY": ""}, "SECRET_KEY", "required when DEBUG is off"),
        ({"ALLOWED_HOSTS": "a.test,,b.test"}, "ALLOWED_HOSTS", "without empty items"),
        ({"SIGNUP_ENABLED": "sometimes"}, "SIGNUP_ENABLED", "'sometimes'"),
    ],
)
def test_bad_setting_is_one_line_naming_the_variable(env, variable, fragment):
    result = manage("check", **env)
    assert result.returncode == 2
    lines = error_lines(result)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"faultline: configuration error: {variable}: ")
    assert fragment in lines[0]


@pytest.mark.parametrize(
    "env,expected",
    [
        # Port 9 on loopback: nothing listens there, so connections are refused at once.
        (
            {"DATABASE_URL": "postgres://faultline:pw@127.0.0.1:9/faultline"},
            ("FAILED database: cannot use PostgreSQL at 127.0.0.1:9/faultline", "DATABASE_URL"),
        ),
        (
            {"CELERY_BROKER_URL": "redis://127.0.0.1:9/0"},
            ("FAILED broker: cannot reach redis://127.0.0.1:9/0", "CELERY_BROKER_URL"),
        ),
    ],
)
def test_unreachable_database_or_broker_is_one_line_from_preflight(env, expected):
    prefix, variable = expected
    result = manage("preflight", **env)
    assert result.returncode == 1
    failed = [line for line in error_lines(result) if line.startswith("FAILED")]
    assert len(failed) == 1, result.stderr
    assert failed[0].startswith(prefix)
    assert variable in failed[0]
    assert "Traceback" not in result.stderr


def test_stdlib_platform_module_is_not_shadowed():
    result = subprocess.run(
        [sys.executable, "-c", "import platform; print(platform.system()); print(platform.__file__)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    system, location = result.stdout.split()
    assert system == "Linux"
    assert not location.startswith(str(REPO))


def test_production_collectstatic_succeeds(tmp_path):
    """DEBUG off uses the hashed, compressed manifest storage, which is stricter than the debug one."""
    result = manage(
        "collectstatic",
        "--noinput",
        "-v",
        "0",
        DEBUG="false",
        SECRET_KEY="test-only-" + "k" * 40,
        FAULTLINE_VAR_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    manifest = (tmp_path / "static" / "staticfiles.json").read_text()
    assert "css/faultline.css" in manifest and "vendor/htmx/htmx.min.js" in manifest


def test_secret_key_file_serves_debug_off_and_keeps_its_key(tmp_path):
    key_file = tmp_path / "keys" / "secret_key"
    env = {"DEBUG": "false", "SECRET_KEY": "", "SECRET_KEY_FILE": str(key_file), "FAULTLINE_VAR_DIR": str(tmp_path)}
    assert manage("check", **env).returncode == 0
    key = key_file.read_text()
    assert len(key) >= 50 and key_file.stat().st_mode & 0o777 == 0o600
    assert manage("check", **env).returncode == 0
    assert key_file.read_text() == key  # the same key after a restart: sessions survive
    key_file.write_text("short")
    result = manage("check", **env)
    assert result.returncode == 2 and "SECRET_KEY_FILE" in result.stderr

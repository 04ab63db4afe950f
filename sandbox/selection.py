"""Which sandbox backend runs lab programs on this host.

``SANDBOX_BACKEND=auto`` picks Docker when an engine answers, else the local
process backend, which does not isolate anything and is for single-user use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from django.conf import settings

from core.errortext import first_line

NOT_ISOLATED_LABEL = "not isolated — single-user use only"


@dataclass(frozen=True)
class BackendChoice:
    name: str  # "docker" | "process"
    ok: bool
    detail: str


def docker_ping(timeout: float = 3.0) -> tuple[bool, str]:
    try:
        import docker
    except ImportError:  # pragma: no cover - docker is a pinned requirement
        return False, "the docker Python package is not installed"
    try:
        client = docker.from_env(timeout=timeout)
        try:
            version = client.version().get("Version", "?")
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - any transport failure means "not reachable"
        return False, engine_unreachable(exc)
    return True, f"Docker engine {version}"


def choose_backend() -> BackendChoice:
    configured = settings.SANDBOX_BACKEND
    if configured == "process":
        return BackendChoice("process", True, f"local process backend ({NOT_ISOLATED_LABEL})")
    ok, detail = docker_ping()
    if configured == "docker":
        return BackendChoice("docker", ok, detail if ok else f"{detail}; SANDBOX_BACKEND=docker requires it")
    if ok:
        return BackendChoice("docker", True, detail)
    return BackendChoice("process", True, f"local process backend ({NOT_ISOLATED_LABEL}); {detail}")


def engine_unreachable(exc: BaseException) -> str:
    """One line naming the engine address and why it did not answer."""
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    text = str(exc)
    reason = "no engine listening" if "No such file" in text or "refused" in text else first_line(exc)
    return f"no Docker engine answers at {where} ({reason})"

"""Sandbox backends: one interface (``base.Sandbox``), a hardened Docker one and a
local-process one for single-user machines without an engine."""

from __future__ import annotations

from sandbox.backends.base import ExecutionLimits, ProgramSpec, Sandbox, SandboxError


def open_sandbox(backend: str, program: ProgramSpec, limits: ExecutionLimits, labels: dict[str, str]) -> Sandbox:
    if backend == "docker":
        from sandbox.backends.docker_backend import DockerSandbox

        return DockerSandbox(program, limits, labels)
    from sandbox.backends.process_backend import ProcessSandbox

    return ProcessSandbox(program, limits, labels)


__all__ = ["ExecutionLimits", "ProgramSpec", "Sandbox", "SandboxError", "open_sandbox"]

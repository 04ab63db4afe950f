"""Small helpers shared by the real-sandbox tests."""

from __future__ import annotations

from sandbox.models import Run


def log_of(run: Run) -> str:
    return "".join(run.log_chunks.values_list("text", flat=True))


def containers_of(run: Run) -> list:
    """Docker containers (running or not) labelled with this run."""
    import docker

    return docker.from_env().containers.list(all=True, filters={"label": f"faultline.run={run.pk}"})

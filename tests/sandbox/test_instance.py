"""One Docker engine, several installations: each reaps only its own containers."""

from __future__ import annotations

import pytest

from sandbox.instance import INSTANCE_LABEL, instance_id
from sandbox.reaper import reap

pytestmark = [pytest.mark.docker, pytest.mark.django_db]


def idle_container(client, instance: str):
    from sandbox.images.tags import image_tag

    labels = {"faultline.run": "987654", "faultline.deadline": "0", INSTANCE_LABEL: instance}
    return client.containers.run(image_tag("cpu"), ["sleep", "60"], detach=True, network_mode="none", labels=labels)


def test_reaper_leaves_other_installations_alone():
    import docker

    client = docker.from_env()
    theirs = idle_container(client, "another-installation")
    ours = idle_container(client, instance_id())
    try:
        report = reap(docker_client=client)
        assert ours.short_id in report.containers_removed
        assert theirs.short_id not in report.containers_removed
        theirs.reload()
        assert theirs.status == "running"
    finally:
        for container in (theirs, ours):
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass

"""Who waits when runs compete for a worker's cores: a run's priority sets its container's CPU weight, so a
candidate's run and grading go ahead of the lab validation a fresh platform does in the background."""

from __future__ import annotations

import re
import textwrap

import pytest

from sandbox import runner, services
from sandbox.models import Run
from tests.sandbox.cgroup_weight import READ_WEIGHT, as_seen_inside
from tests.sandbox.helpers import log_of

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]


def weight_inside(run: Run) -> tuple[str, int]:
    match = re.search(r"\[r0\] (cpu\.shares|cpu\.weight) (\d+)", log_of(run))
    assert match, log_of(run)
    return match[1], int(match[2])


@pytest.mark.parametrize(
    ("priority", "shares"),
    [(Run.Priority.INTERVIEW, 2048), (Run.Priority.PRACTICE, 1024), (Run.Priority.VALIDATION, 128)],
)
def test_a_runs_priority_is_its_containers_cpu_weight(settings, priority, shares):
    settings.SANDBOX_BACKEND = "docker"
    run = services.create_run(
        owner=None, files={"main.py": textwrap.dedent(READ_WEIGHT)}, enqueue=False, priority=priority
    )
    runner.execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == "passed", log_of(run)
    file, value = weight_inside(run)
    assert value == as_seen_inside(shares, file)


def test_validation_is_background_work_unless_a_candidate_waits_for_it():
    validation = services.create_run(owner=None, files={"main.py": "pass"}, purpose="validate", enqueue=False)
    assert validation.cpu_weight < Run(priority=Run.Priority.PRACTICE).cpu_weight
    # The reference fix a candidate's grading waits for is a validate run with the candidate's priority.
    reference = services.create_run(
        owner=None, files={"main.py": "pass"}, purpose="validate", enqueue=False, priority=Run.Priority.INTERVIEW
    )
    assert reference.cpu_weight == Run(priority=Run.Priority.INTERVIEW).cpu_weight

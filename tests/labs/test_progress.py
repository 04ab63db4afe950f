"""A fix's stage while it waits, runs and is graded: written by grading as it goes, shown by the run API."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from labs import grading, services
from labs.models import LabRun
from labs.progress import CHECK, GRADER_EVALUATING, GRADER_STARTING, MEASUREMENTS
from sandbox import runner
from sandbox.models import Run
from tests.labs.helpers import EXAMPLE, publish

pytestmark = pytest.mark.django_db


def test_grading_writes_its_stages_in_order(settings, candidate):
    """Each stage is read back from the database when it is written, as a polling page would see it."""
    settings.SANDBOX_BACKEND = "process"
    attempt = services.start_attempt(candidate, publish())
    with mock.patch("sandbox.services.enqueue_run"):
        lab_run = services.start_run(attempt, fix=True)
    seen = []
    write = grading.record_stage

    def spy(lab_run_id: int, stage: str, **details) -> None:
        write(lab_run_id, stage, **details)
        seen.append(LabRun.objects.get(pk=lab_run_id).progress)

    with mock.patch("labs.grading.record_stage", spy):
        runner.execute_run(lab_run.run_id)
    lab_run.refresh_from_db()
    assert lab_run.graded_at is not None and lab_run.run.status in (Run.Status.PASSED, Run.Status.FAILED)
    names = [check["name"] for check in lab_run.version.spec["checks"]]
    total = len(names)
    assert [entry["stage"] for entry in seen[:3]] == [MEASUREMENTS, GRADER_STARTING, GRADER_EVALUATING]
    assert seen[3:] == [
        {"stage": CHECK, "index": index, "total": total, "name": name} for index, name in enumerate(names, 1)
    ]
    # The stages came before the verdict, and the checks graded are the ones the stages named.
    assert [check["name"] for check in lab_run.checks] == names


@pytest.fixture
def fix_run(login, candidate):
    publish()
    client = login(candidate)
    attempt_id = client.post(f"/api/labs/{EXAMPLE}/attempts/").json()["id"]
    url = f"/api/labs/attempts/{attempt_id}/runs/"
    with mock.patch("sandbox.services.enqueue_run"):
        run_id = client.post(url, {"fix": True}, content_type="application/json").json()["id"]
    return client, f"{url}{run_id}/", LabRun.objects.get(pk=run_id)


def test_the_run_api_shows_the_stage_in_the_readers_language(fix_run, candidate):
    client, url, lab_run = fix_run
    assert client.get(url).json()["stage"] == "queued: next to start"
    # Two runs queued earlier in the same queue, at the same priority, start first.
    for _ in range(2):
        other = Run.objects.create(files={"main.py": "pass"}, queue=lab_run.run.queue)
        Run.objects.filter(pk=other.pk).update(created_at=lab_run.run.created_at - timedelta(seconds=5))
    assert client.get(url).json()["stage"] == "queued: position 3 in the queue"

    Run.objects.filter(pk=lab_run.run_id).update(
        status=Run.Status.RUNNING, started_at=timezone.now() - timedelta(seconds=12)
    )
    assert client.get(url).json()["stage"] == "running, 10 s"

    Run.objects.filter(pk=lab_run.run_id).update(status=Run.Status.GRADING)
    LabRun.objects.filter(pk=lab_run.pk).update(progress={"stage": CHECK, "index": 2, "total": 5, "name": "exit-ok"})
    assert client.get(url).json()["stage"] == "grading: check 2 of 5: exit-ok"
    zh = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").json()["stage"]
    assert zh == "评分中：第 2 项检查（共 5 项）：exit-ok"

    Run.objects.filter(pk=lab_run.run_id).update(status=Run.Status.FAILED)
    assert client.get(url).json()["stage"] == ""


def test_the_fix_result_page_shows_the_stage_before_the_verdict(fix_run):
    client, url, lab_run = fix_run
    Run.objects.filter(pk=lab_run.run_id).update(status=Run.Status.GRADING)
    LabRun.objects.filter(pk=lab_run.pk).update(progress={"stage": GRADER_EVALUATING})
    page = client.get(f"/labs/attempts/{lab_run.attempt_id}/fixes/{lab_run.pk}/").content.decode()
    assert 'id="fix-stage"' in page and 'aria-live="polite"' in page
    assert "grading: evaluating the saved model on held-out data" in page


def test_the_fix_result_page_explains_each_diagnosis_point(fix_run):
    """The same breakdown as a practice answer: each point's state, the sentence that earned it, and the
    sentence that contradicted it with why it is wrong (here: another variant's value)."""
    client, _url, lab_run = fix_run
    attempt = lab_run.attempt
    text = "The inputs are not standardised, so the first layer's outputs explode and the loss turns NaN."
    services.submit_diagnosis(attempt, "unnormalised-inputs", text)
    page = client.get(f"/labs/attempts/{attempt.pk}/fixes/{lab_run.pk}/").content.decode()
    assert 'data-testid="diagnosis-points"' in page and "Earned by:" in page
    assert "<q>The inputs are not standardised, so the first layer&#x27;s outputs explode" in page
    assert 'data-state="missed"' in page  # the own-run point: this text quotes no value of the variant

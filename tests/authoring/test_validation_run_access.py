"""The "log and events" link of a validation row opens for every author, not only the one who started the
validation; candidates' own runs stay private. Over HTTP, after a real validation on the process backend."""

from __future__ import annotations

import json
import re
from unittest import mock

import pytest

from authoring import lab_drafts, lab_publishing
from core.roles import Role
from labs import services as lab_services
from sandbox.models import RunLogChunk
from tests.conftest import make_user
from tests.labs.helpers import publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def validated(author, settings):
    """A finished validation started by ``author``; the faulty program's row is the one that fails."""
    settings.SANDBOX_BACKEND = "process"
    draft = lab_drafts.create_from_scratch(author, "correctness-log-link")
    with mock.patch("authoring.lab_publishing.enqueue_validation"):
        job = lab_publishing.start_validation(draft, [0], author)
    return lab_publishing.run_validation_job(job.pk)


def failing_row_link(client, job) -> str:
    """The link the validation page builds for the failing row, as its script does."""
    page = client.get(f"/author/labs/validations/{job.pk}/").content.decode()
    payload = json.loads(re.search(r'<script id="job-data" type="application/json">(.*?)</script>', page).group(1))
    run_url = re.search(r'data-run-url="([^"]+)"', page).group(1)
    row = next(r for r in payload["rows"] if r["outcome"] == "fail")
    return run_url.replace("/0/", f"/{row['run_id']}/")


def test_another_author_opens_the_log_of_a_validation_run(client, author, validated):
    other = make_user("second-author", Role.AUTHOR)
    client.force_login(other)
    link = failing_row_link(client, validated)
    page = client.get(link)
    assert page.status_code == 200
    # Read only: cancelling and diagnostics stay with the author who started the validation.
    assert "Stack dump of every rank" not in page.content.decode()
    live = client.get(link + "live/")
    assert live.status_code == 200
    assert "the total is wrong" in live.content.decode()  # the faulty program's failed assertion, in its log
    run_id = int(link.rstrip("/").rsplit("/", 1)[1])
    assert client.get(f"/api/sandbox/runs/{run_id}/").status_code == 200
    assert client.post(link + "cancel/").status_code == 404
    assert client.post(f"/api/sandbox/runs/{run_id}/cancel/").status_code == 404

    client.force_login(author)
    assert "Stack dump of every rank" in client.get(link).content.decode()


def test_a_candidate_never_opens_a_validation_run(client, author, candidate, validated):
    client.force_login(author)
    link = failing_row_link(client, validated)
    client.force_login(candidate)
    assert client.get(link).status_code == 403
    assert client.get(link + "live/").status_code == 403
    run_id = int(link.rstrip("/").rsplit("/", 1)[1])
    assert client.get(f"/api/sandbox/runs/{run_id}/").status_code == 403


def test_an_author_cannot_open_a_candidates_practice_run(client, author, candidate, settings):
    settings.SANDBOX_BACKEND = "process"
    attempt = lab_services.start_attempt(candidate, publish())
    with mock.patch("sandbox.services.enqueue_run"):
        lab_run = lab_services.start_run(attempt)
    RunLogChunk.objects.create(run=lab_run.run, seq=1, text="[r0] the candidate's own output\n")
    client.force_login(candidate)
    assert client.get(f"/sandbox/runs/{lab_run.run_id}/").status_code == 403  # not an author at all
    client.force_login(author)
    for url in (f"/sandbox/runs/{lab_run.run_id}/", f"/sandbox/runs/{lab_run.run_id}/live/"):
        assert client.get(url).status_code == 404
    assert client.get(f"/api/sandbox/runs/{lab_run.run_id}/").status_code == 404

"""Draft → version → validation on the authoring queue → publish → roll back → export, through the services
and the real runner on the process backend."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from unittest import mock

import pytest

from authoring import lab_drafts, lab_publishing
from authoring.lab_drafts import DraftRefused
from authoring.models import AuthoringEvent, ValidationJob
from labs.loader import load_labs
from labs.models import Attempt, Lab
from labs.services import start_attempt
from labs.spec import load_lab

pytestmark = pytest.mark.django_db


@pytest.fixture
def process_backend(settings):
    settings.SANDBOX_BACKEND = "process"


def validated_draft(author, slug="correctness-one-short", seeds=(0, 1, 2)):
    draft = lab_drafts.create_from_scratch(author, slug)
    with mock.patch("authoring.lab_publishing.enqueue_validation") as enqueue:
        job = lab_publishing.start_validation(draft, list(seeds), author)
    job = lab_publishing.run_validation_job(job.pk)
    return draft, job, enqueue


def test_skeleton_validates_and_publishes(author, candidate, process_backend, django_capture_on_commit_callbacks):
    draft = lab_drafts.create_from_scratch(author, "correctness-one-short")
    with mock.patch("authoring.lab_publishing.enqueue_validation") as enqueue:
        with django_capture_on_commit_callbacks(execute=True):
            job = lab_publishing.start_validation(draft, [0, 1, 2], author)
    enqueue.assert_called_once_with(job.pk)
    assert job.total_runs == 6
    job = lab_publishing.run_validation_job(job.pk)
    assert job.status == ValidationJob.Status.PASSED, job.rows
    assert [(r["variant"], r["seed"]) for r in job.rows] == [
        ("baseline", 0),
        ("solution", 0),
        ("baseline", 1),
        ("solution", 1),
        ("baseline", 2),
        ("solution", 2),
    ]
    assert all(r["run_id"] and r["checks"] for r in job.rows)
    version = job.version
    version.refresh_from_db()
    lab = version.lab
    assert lab.origin == Lab.Origin.BROWSER and lab.current is None  # validation alone never publishes
    lab_publishing.publish(version, author)
    lab.refresh_from_db()
    assert lab.current == version
    attempt = start_attempt(candidate, lab)
    assert attempt.version == version
    kinds = set(AuthoringEvent.objects.filter(slug=lab.slug).values_list("kind", flat=True))
    assert {"created", "validation_started", "validated", "published"} <= kinds


def test_publishing_needs_three_passing_seeds(author, process_backend):
    _, job, _ = validated_draft(author, seeds=(0,))
    assert job.status == ValidationJob.Status.PASSED
    with pytest.raises(DraftRefused, match="1 seed.*needs 3"):
        lab_publishing.publish(job.version, author)


def test_a_running_attempt_keeps_its_version_and_roll_back_restores_the_old_one(author, candidate, process_backend):
    draft, job, _ = validated_draft(author)
    v1 = job.version
    lab_publishing.publish(v1, author)
    running = start_attempt(candidate, v1.lab)
    files = dict(draft.files)
    files["lab.yaml"] = files["lab.yaml"].replace("count: {int: [10, 1000]}", "count: {int: [10, 50]}")
    draft = lab_drafts.save_draft(draft, files, draft.revision, author)
    with mock.patch("authoring.lab_publishing.enqueue_validation"):
        job2 = lab_publishing.start_validation(draft, [0, 1, 2], author)
    job2 = lab_publishing.run_validation_job(job2.pk)
    v2 = job2.version
    assert v2.number == v1.number + 1
    lab_publishing.publish(v2, author)
    assert start_attempt(candidate, Lab.objects.get(pk=v1.lab_id)).version == v2
    running.refresh_from_db()
    assert running.version == v1
    lab = Lab.objects.get(pk=v1.lab_id)
    with pytest.raises(DraftRefused, match="changed since"):
        lab_publishing.roll_back(v1, author, expected_current_id=v1.pk)  # stale page
    lab_publishing.roll_back(v1, author, expected_current_id=lab.current_id)
    lab.refresh_from_db()
    assert lab.current == v1
    assert AuthoringEvent.objects.filter(kind="rolled_back", slug=lab.slug).exists()
    _, diff = lab_publishing.version_diff(v2)
    assert "-  count: {int: [10, 1000]}" in diff and "+  count: {int: [10, 50]}" in diff


def test_cancel_stops_before_the_next_run(author, process_backend):
    draft = lab_drafts.create_from_scratch(author, "correctness-one-short")
    with mock.patch("authoring.lab_publishing.enqueue_validation"):
        job = lab_publishing.start_validation(draft, [0, 1, 2], author)
    real = lab_publishing.validate_version

    def cancel_after_first(version, seeds, progress, **kwargs):
        calls = {"n": 0}

        def cancelled():
            calls["n"] += 1
            if calls["n"] == 2:
                lab_publishing.cancel_validation(ValidationJob.objects.get(pk=job.pk), author)
            return ValidationJob.objects.get(pk=job.pk).cancel_requested

        return real(version, seeds, progress, **{**kwargs, "cancelled": cancelled})

    with mock.patch("authoring.lab_publishing.validate_version", cancel_after_first):
        job = lab_publishing.run_validation_job(job.pk)
    assert job.status == ValidationJob.Status.CANCELLED
    assert job.version.validated_at is None


def test_a_queued_job_cancelled_never_runs(author):
    draft = lab_drafts.create_from_scratch(author, "correctness-one-short")
    with mock.patch("authoring.lab_publishing.enqueue_validation"):
        job = lab_publishing.start_validation(draft, [0], author)
    assert lab_publishing.cancel_validation(job, author)
    with mock.patch("authoring.lab_publishing.validate_version") as validate:
        job = lab_publishing.run_validation_job(job.pk)
    validate.assert_not_called()
    assert job.status == ValidationJob.Status.CANCELLED


def test_preview_attempts_never_count(author, process_backend):
    draft = lab_drafts.create_from_scratch(author, "correctness-one-short")
    shown = lab_publishing.preview(draft, 3, "en")
    assert shown["title"] == "A total that is one short"
    assert "{{" not in shown["files"]["main.py"]
    attempt = lab_publishing.start_preview(draft, 3, author)
    assert attempt.purpose == Attempt.Purpose.PREVIEW and attempt.seed == 3
    assert attempt.files == shown["files"]
    from labs.services import counted_attempts

    assert not counted_attempts().filter(pk=attempt.pk).exists()
    assert attempt.version.lab.current is None


def test_export_is_a_folder_loadlabs_accepts_and_round_trips(author, tmp_path, process_backend):
    _, job, _ = validated_draft(author)
    version = job.version
    data = lab_publishing.export_version(version, author)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist()) == [
            "correctness-one-short/lab.yaml", "correctness-one-short/program/main.py",
            "correctness-one-short/solution/main.py",
        ]  # fmt: skip
        archive.extractall(tmp_path)
    assert load_lab(tmp_path / "correctness-one-short").content_hash() == version.content_hash
    imported = lab_drafts.create_from_zip(author, data, "x.zip")
    assert lab_drafts.parse_files(imported.slug, imported.files).content_hash() == version.content_hash
    assert AuthoringEvent.objects.filter(kind="exported").exists()
    assert AuthoringEvent.objects.filter(kind="imported").exists()


@pytest.mark.parametrize("slug", ["correctness-missing-eval", "nan-lr-unnormalised"])
def test_catalog_versions_round_trip(author, tmp_path, slug):
    version = Lab.objects.get(slug=slug).versions.order_by("-number").first()
    draft = lab_drafts.create_from_zip(author, lab_publishing.export_version(version, author))
    assert draft.lab == version.lab
    assert lab_drafts.parse_files(draft.slug, draft.files).content_hash() == version.content_hash


def test_exportlabs_writes_the_published_catalog_and_loadlabs_reads_it(author, tmp_path, process_backend):
    from django.core.management import call_command

    _, job, _ = validated_draft(author)
    lab_publishing.publish(job.version, author)
    call_command("exportlabs", "--out", str(tmp_path), verbosity=0)
    folder = tmp_path / "correctness-one-short"
    assert (folder / "lab.yaml").is_file()
    assert load_lab(folder).content_hash() == job.version.content_hash
    report = load_labs(tmp_path)  # the exported folders are a catalog loadlabs accepts
    assert "correctness-one-short" in report.unchanged


def test_loadlabs_keeps_labs_made_in_the_browser(author, process_backend):
    _, job, _ = validated_draft(author, seeds=(0,))
    report = load_labs()
    assert "correctness-one-short" not in report.retired
    assert not Lab.objects.get(slug="correctness-one-short").retired


def test_validation_jobs_are_routed_to_the_authoring_queue(author):
    draft = lab_drafts.create_from_scratch(author, "correctness-one-short")
    with mock.patch("authoring.lab_publishing.current_app.send_task") as send:
        lab_publishing.enqueue_validation(7)
    send.assert_called_once_with("authoring.run_validation", args=[7], queue="authoring")
    from authoring.tasks import run_validation

    assert run_validation.name == "authoring.run_validation"
    assert Path(draft.slug)

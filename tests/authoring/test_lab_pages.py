"""The lab authoring pages and endpoints over HTTP, and who may reach them."""

from __future__ import annotations

import io
import json
import zipfile
from unittest import mock

import pytest
from django.utils import timezone

from authoring import lab_drafts, lab_publishing
from authoring.models import AuthoringEvent, LabDraft, ValidationJob
from labs.models import Attempt, Lab, LabVersion

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(author) -> LabDraft:
    return lab_drafts.create_from_scratch(author, "correctness-tiny")


@pytest.fixture
def job(draft, author) -> ValidationJob:
    with mock.patch("authoring.lab_publishing.enqueue_validation"):
        return lab_publishing.start_validation(draft, [0, 1, 2], author)


def endpoints(draft, job) -> list[tuple[str, str]]:
    slug, n = job.version.lab.slug, job.version.number
    return [
        ("get", "/author/labs/"),
        ("post", "/author/labs/new/"),
        ("get", f"/author/labs/{slug}/"),
        ("get", f"/author/labs/{slug}/versions/{n}/diff/"),
        ("get", f"/author/labs/{slug}/versions/{n}/export.zip"),
        ("post", f"/author/labs/{slug}/versions/{n}/publish/"),
        ("post", f"/author/labs/{slug}/versions/{n}/rollback/"),
        ("post", f"/author/labs/{slug}/versions/{n}/draft/"),
        ("get", f"/author/labs/drafts/{draft.pk}/"),
        ("get", f"/author/labs/drafts/{draft.pk}/preview/?seed=3"),
        ("post", f"/author/labs/drafts/{draft.pk}/preview/start/"),
        ("post", f"/author/labs/drafts/{draft.pk}/validate/"),
        ("post", f"/author/labs/drafts/{draft.pk}/discard/"),
        ("get", f"/author/labs/validations/{job.pk}/"),
        ("get", f"/author/labs/api/drafts/{draft.pk}/"),
        ("put", f"/author/labs/api/drafts/{draft.pk}/"),
        ("post", f"/author/labs/api/drafts/{draft.pk}/check/"),
        ("get", f"/author/labs/api/validations/{job.pk}/"),
        ("post", f"/author/labs/api/validations/{job.pk}/cancel/"),
    ]


def call(client, method: str, url: str):
    if method == "get":
        return client.get(url)
    return getattr(client, method)(url, data=json.dumps({"files": {}}), content_type="application/json")


def test_anonymous_users_are_sent_to_log_in(client, draft, job):
    for method, url in endpoints(draft, job):
        response = call(client, method, url)
        if "/api/" in url:
            assert response.status_code in (401, 403), url
        else:
            assert response.status_code == 302 and "/accounts/login/" in response["Location"], url


@pytest.mark.parametrize("who", ["candidate", "interviewer"])
def test_candidates_and_interviewers_are_refused_everywhere(request, who, login, draft, job):
    client = login(request.getfixturevalue(who))
    for method, url in endpoints(draft, job):
        assert call(client, method, url).status_code == 403, url
    draft.refresh_from_db()
    assert draft.discarded_at is None and draft.revision == 1
    assert not AuthoringEvent.objects.exclude(actor_id=draft.created_by_id).exists()


def test_staff_may_use_the_author_pages(login, staff_admin, draft, job):
    client = login(staff_admin)
    assert client.get("/author/labs/").status_code == 200
    assert client.get(f"/author/labs/drafts/{draft.pk}/").status_code == 200


def test_a_candidate_never_reaches_an_authors_preview_attempt(login, author, candidate, draft):
    attempt = lab_publishing.start_preview(draft, 3, author)
    client = login(candidate)
    assert client.get(f"/labs/attempts/{attempt.pk}/").status_code == 404
    assert client.get(f"/api/labs/attempts/{attempt.pk}/").status_code == 404
    # An unpublished lab made in the browser shows no version, solution or grader to candidates.
    response = client.get("/labs/correctness-tiny/")
    assert response.status_code == 404
    assert "range(1, count + 1)" not in response.content.decode()


def test_the_lab_list_shows_versions_drafts_and_the_last_validation(login, author, draft, job):
    ValidationJob.objects.filter(pk=job.pk).update(status=ValidationJob.Status.PASSED, finished_at=timezone.now())
    page = login(author).get("/author/labs/").content.decode()
    assert "nan-lr-unnormalised" in page and "correctness-tiny" in page
    assert f"/author/labs/drafts/{draft.pk}/" in page
    assert "Passed" in page and "3 seeds" in page and "by auth" in page


def test_new_drafts_from_each_source(login, author):
    client = login(author)
    response = client.post("/author/labs/new/", {"source": "scratch", "slug": "nan-fresh"})
    fresh = LabDraft.objects.get(slug="nan-fresh")
    assert response["Location"] == f"/author/labs/drafts/{fresh.pk}/"
    client.post("/author/labs/new/", {"source": "copy", "lab": "nan-lr-unnormalised"})
    copy = LabDraft.objects.get(slug="nan-lr-unnormalised")
    assert copy.lab.slug == "nan-lr-unnormalised"
    data = lab_publishing.export_version(copy.lab.versions.first(), author)
    upload = io.BytesIO(data)
    upload.name = "nan.zip"
    client.post("/author/labs/new/", {"source": "zip", "zip": upload})
    assert LabDraft.objects.filter(slug="nan-lr-unnormalised").count() == 2
    response = client.post("/author/labs/new/", {"source": "scratch", "slug": "nan-lr-unnormalised"}, follow=True)
    assert "exists already" in response.content.decode()


def test_editor_save_check_and_a_stale_save(login, author, draft):
    client = login(author)
    page = client.get(f"/author/labs/drafts/{draft.pk}/").content.decode()
    assert "draft-data" in page and "program/main.py" in page
    api = f"/author/labs/api/drafts/{draft.pk}/"
    files = {**draft.files, "program/main.py": "# edited\n"}
    saved = client.put(api, {"files": files, "revision": 1}, content_type="application/json")
    assert saved.status_code == 200 and saved.json()["revision"] == 2
    stale = client.put(api, {"files": draft.files, "revision": 1}, content_type="application/json")
    assert stale.status_code == 409
    body = stale.json()
    assert "auth saved this draft at" in body["error"]["message"] and body["revision"] == 2
    bad = {**files, "lab.yaml": files["lab.yaml"].replace("difficulty: 1", "difficulty: 9")}
    checked = client.post(api + "check/", {"files": bad}, content_type="application/json").json()
    assert checked["ok"] is False
    [problem] = checked["problems"]
    assert problem["file"] == "lab.yaml" and problem["where"] == "difficulty" and problem["line"] == 3
    draft.refresh_from_db()
    assert draft.files["lab.yaml"] == files["lab.yaml"]  # checking never saves
    hostile = client.put(api, {"files": {**files, "../x": "x"}, "revision": 2}, content_type="application/json")
    assert hostile.status_code == 400 and "'..'" in json.dumps(hostile.json())


def test_validate_page_and_progress_endpoint(login, author, draft, django_capture_on_commit_callbacks):
    client = login(author)
    with (
        mock.patch("authoring.lab_publishing.enqueue_validation") as enqueue,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(f"/author/labs/drafts/{draft.pk}/validate/", {"seeds": "0-2"})
    job = ValidationJob.objects.get()
    assert response["Location"] == f"/author/labs/validations/{job.pk}/"
    assert job.seeds == [0, 1, 2] and enqueue.called
    data = client.get(f"/author/labs/api/validations/{job.pk}/").json()
    assert data["status"] == "queued" and data["total_runs"] == 6 and data["rows"] == []
    refused = client.post(f"/author/labs/drafts/{draft.pk}/validate/", {"seeds": "0-2"}, follow=True)
    assert "being validated already" in refused.content.decode()
    cancelled = client.post(f"/author/labs/api/validations/{job.pk}/cancel/").json()
    assert cancelled["status"] == "cancelled" and cancelled["finished"]
    too_many = client.post(f"/author/labs/drafts/{draft.pk}/validate/", {"seeds": "25"}, follow=True)
    assert "choose 1–20 seeds" in too_many.content.decode()


def test_preview_page_shows_what_a_candidate_sees_and_starts_a_preview_attempt(login, author, draft):
    client = login(author)
    page = client.get(f"/author/labs/drafts/{draft.pk}/preview/?seed=3").content.decode()
    shown = lab_publishing.preview(draft, 3, "en")
    assert "A total that is one short" in page and "Which numbers does range" in page
    assert f"count = {shown['params']['count']}" in page
    response = client.post(f"/author/labs/drafts/{draft.pk}/preview/start/", {"seed": "3"})
    attempt = Attempt.objects.get(user=author)
    assert response["Location"] == f"/labs/attempts/{attempt.pk}/"
    assert attempt.purpose == Attempt.Purpose.PREVIEW
    assert "Your attempts" not in client.get("/labs/").content.decode()  # previews are never listed


@pytest.mark.parametrize("seed", ["2147483648", "99999999999999999999", "-1", "three"])
def test_a_preview_seed_out_of_range_is_refused_naming_the_field(login, author, draft, seed):
    client = login(author)
    shown = client.get(f"/author/labs/drafts/{draft.pk}/preview/", {"seed": seed})
    assert shown.status_code == 400
    page = shown.content.decode()
    assert "seed: a whole number from 0 to 2147483647" in page
    assert 'id="preview-title"' not in page  # nothing is previewed
    started = client.post(f"/author/labs/drafts/{draft.pk}/preview/start/", {"seed": seed})
    assert started.status_code == 400
    assert "seed: a whole number from 0 to 2147483647" in started.content.decode()
    assert not Attempt.objects.filter(user=author).exists()


def test_the_largest_seed_a_candidate_can_draw_previews(login, author, draft):
    client = login(author)
    page = client.get(f"/author/labs/drafts/{draft.pk}/preview/", {"seed": "2147483647"})
    assert page.status_code == 200 and 'id="preview-title"' in page.content.decode()


def test_validation_seeds_above_the_largest_seed_are_refused(login, author, draft):
    client = login(author)
    refused = client.post(f"/author/labs/drafts/{draft.pk}/validate/", {"seeds": "2147483646-2147483648"}, follow=True)
    assert "goes above the largest seed, 2147483647" in refused.content.decode()
    assert not ValidationJob.objects.exists()


def test_publish_is_refused_without_three_seeds_and_the_lab_page_lists_history(login, author, draft, job):
    client = login(author)
    version = job.version
    LabVersion.objects.filter(pk=version.pk).update(validated_at=timezone.now())
    ValidationJob.objects.filter(pk=job.pk).update(seeds=[0], status=ValidationJob.Status.PASSED)
    response = client.post(f"/author/labs/correctness-tiny/versions/{version.number}/publish/", follow=True)
    assert "publishing needs 3" in response.content.decode()
    ValidationJob.objects.filter(pk=job.pk).update(seeds=[0, 1, 2])
    response = client.post(f"/author/labs/correctness-tiny/versions/{version.number}/publish/", follow=True)
    assert Lab.objects.get(slug="correctness-tiny").current_id == version.pk
    page = response.content.decode()
    assert "passed on 3 seeds" in page and "published" in page
    for kind in ("created", "validation started", "published"):
        assert kind in page


def test_export_downloads_a_zip_of_the_folder(login, author, draft, job):
    response = login(author).get(f"/author/labs/correctness-tiny/versions/{job.version.number}/export.zip")
    assert response["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    assert "correctness-tiny/lab.yaml" in names
    assert AuthoringEvent.objects.filter(kind="exported", actor=author).exists()


def test_diff_page(login, author, draft, job):
    page = login(author).get(f"/author/labs/correctness-tiny/versions/{job.version.number}/diff/").content.decode()
    assert "the first version" in page and "+slug: correctness-tiny" in page


def test_zh_hans_pages_render(login, author, draft, job):
    client = login(author)
    client.cookies["django_language"] = "zh-hans"
    for url in ("/author/labs/", f"/author/labs/drafts/{draft.pk}/", f"/author/labs/validations/{job.pk}/"):
        assert client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").status_code == 200

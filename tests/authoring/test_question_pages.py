"""The author's question pages and the live check, through HTTP: who may use them and what they show."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from authoring.models import AuthoringEvent, QuestionVersion
from authoring.question_forms import as_post_data
from core.roles import Role
from questions.bankfile import BANK_DIR, parse_question, parse_question_text
from questions.models import Question
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
SLUG = "nan-loss-checklist"
BANK_FILE = BANK_DIR / "numerics" / f"{SLUG}.md"
PAGES = [
    ("get", "/author/questions/"),
    ("get", "/author/questions/new/"),
    ("post", "/author/questions/new/"),
    ("get", f"/author/questions/{SLUG}/"),
    ("post", f"/author/questions/{SLUG}/"),
    ("get", f"/author/questions/{SLUG}/export/"),
    ("post", "/author/questions/import/"),
]
API = [("post", "/author/questions/api/check/")]


def form_data(question: Question, **changes) -> dict:
    from authoring import question_editing as editing

    fields = editing.spec_to_fields(parse_question(BANK_FILE))
    for name, value in changes.items():
        fields[name] = value
    return {**as_post_data(fields), "base": editing.state_token(question)}


@pytest.mark.parametrize(("method", "url"), PAGES + API)
@pytest.mark.parametrize("role", ["candidate", "interviewer"])
def test_candidates_and_interviewers_are_refused_everywhere(request, login, method, url, role):
    client = login(request.getfixturevalue(role))
    response = getattr(client, method)(url)
    assert response.status_code == 403
    assert not QuestionVersion.objects.exists() and not AuthoringEvent.objects.exists()


@pytest.mark.parametrize(("method", "url"), PAGES)
def test_anonymous_visitors_are_sent_to_log_in(client, method, url):
    response = getattr(client, method)(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_anonymous_api_is_refused(client):
    assert client.post("/author/questions/api/check/").status_code == 403


@pytest.mark.parametrize("role", ["author", "staff_admin"])
def test_authors_and_admins_get_the_pages(request, login, role):
    client = login(request.getfixturevalue(role))
    assert client.get("/author/questions/").status_code == 200
    assert client.get(f"/author/questions/{SLUG}/").status_code == 200
    assert client.get("/author/questions/new/").status_code == 200


def test_list_shows_questions_and_filters(login, author):
    client = login(author)
    page = client.get("/author/questions/").content.decode()
    assert "80 questions" in page and "A PyTorch training loop only ever reports NaN loss" in page
    assert "bank file only" in page
    page = client.get("/author/questions/?topic=numerics&q=NaN").content.decode()
    assert f"/author/questions/{SLUG}/" in page and "/author/questions/kubernetes-gpu-resources/" not in page


def test_editor_shows_the_fields_previews_and_rubric_check(login, author):
    page = login(author).get(f"/author/questions/{SLUG}/").content.decode()
    assert 'name="rubric[0].concepts"' in page and "learning rate | lr | 学习率" in page
    assert 'data-preview-for="answer.zh"' in page
    assert "Reference answer (English)" in page and "Reference answer (Chinese)" in page
    assert 'data-testid="rubric-score"' in page
    assert "Candidates see the bank file" in page


def test_check_endpoint_reports_errors_previews_and_scores(login, author):
    question = Question.objects.get(slug=SLUG)
    data = form_data(question)
    data["rubric[0].concepts"] += "\nzebra crossing | 斑马线"
    data["title.en"] = ""
    data["prompt.en"] = "**Why?** <script>alert(1)</script>"
    data["sample"] = ["I would lower the learning rate first, since it is too high."]
    result = login(author).post("/author/questions/api/check/", data).json()
    assert not result["ok"]
    assert "title.en: is missing or empty" in result["errors"]["title.en"]
    assert (
        "<strong>Why?</strong>" in result["previews"]["prompt.en"] and "<script" not in result["previews"]["prompt.en"]
    )
    reference, _zh, sample = result["results"]
    first = reference["points"][0]
    assert "zebra crossing" in first["missing"] and first["state"] == "partly found"
    assert sample["name"] == "Sample answer 1" and sample["score"] < reference["score"]
    assert "zebra crossing" in result["rubric_html"]
    assert not QuestionVersion.objects.exists()  # checking saves nothing


def test_a_chinese_term_added_in_the_editor_counts_at_once_for_candidates(login, author, candidate):
    """The term "缓存命中" is in no bank file, and the catalog's dictionary cuts "缓存命中率" into 缓存/命中率: the
    term counts only because scoring puts the question's own terms into the dictionary."""
    question = Question.objects.get(slug=SLUG)
    data = form_data(question)
    data["rubric[1].concepts"] = "cache hit | 缓存命中"
    response = login(author).post(f"/author/questions/{SLUG}/", data, follow=True)
    assert "Saved version 2: candidates see it now." in response.content.decode()
    answer = "我认为缓存命中率太低，所以每一步都要重新读取数据，训练才会变慢。"
    body = (
        login(candidate)
        .post("/api/practice-answers/", {"question": SLUG, "text": answer}, content_type="application/json")
        .json()
    )
    [point] = [c for c in body["coverage"] if c["key"] == "dirty-data"]
    assert point["found"] == ["缓存命中"] and point["fraction"] == 1


def test_editor_shows_the_calibration_table_against_the_rubric_being_edited(login, author):
    client = login(author)
    page = client.get(f"/author/questions/{SLUG}/").content.decode()
    assert 'data-testid="calibration-table"' in page
    assert "nan-loss-checklist.calibration.yaml" in page and ", 0 out of band." in page
    question = Question.objects.get(slug=SLUG)

    # An author who drops the unstable-ops point's misconceptions sees its calibration answer leave its band
    # before saving: the misconception it was written to trip no longer fires.
    data = form_data(question)
    for name in [k for k in data if k.startswith("rubric[3].misconceptions")]:
        data[name] = ""
    result = client.post("/author/questions/api/check/", data).json()
    html = result["calibration_html"]
    assert "1 out of band." in html and "no misconception of the point fired" in html

    # Renaming the point makes the file itself not fit: it is named, and the references still score.
    data = form_data(question)
    data["rubric[3].key"] = "unsafe-ops"
    html = client.post("/author/questions/api/check/", data).json()["calibration_html"]
    assert "does not fit the question as edited" in html and "unknown rubric point &#x27;unstable-ops&#x27;" in html
    assert html.count('data-kind="reference"') == 2


def test_a_question_without_calibration_file_says_so_in_the_editor(login, author):
    question = Question.objects.get(slug=SLUG)
    data = form_data(question, slug="nan-loss-checklist-copy")
    html = login(author).post("/author/questions/api/check/", data).json()["calibration_html"]
    assert "no calibration file" in html and html.count('data-kind="reference"') == 2


def test_save_makes_a_version_candidates_see_and_export_gives_it_back(login, author, candidate):
    question = Question.objects.get(slug=SLUG)
    client = login(author)
    data = form_data(question)
    data["title.en"] = "Loss turns NaN, the order of checks"
    data["rubric[0].weight"] = "5"
    data.update(
        {f"rubric[6].{name}": "" for name in ("key", "weight", "en", "zh", "concepts")}
    )  # the blank spare point
    response = client.post(f"/author/questions/{SLUG}/", data, follow=True)
    assert response.redirect_chain[-1][0] == f"/author/questions/{SLUG}/"
    page = response.content.decode()
    assert "Saved version 2: candidates see it now." in page
    assert "Candidates see version 2, saved by auth" in page
    assert "Version 1" in page and "the bank file as loadbank applied it" in page
    assert "+  en: Loss turns NaN, the order of checks" in page  # the diff against version 1
    assert "auth edited (version 2)" in page  # the audit trail on the page

    export = client.get(f"/author/questions/{SLUG}/export/")
    assert export["Content-Disposition"] == f'attachment; filename="{SLUG}.md"'
    text = export.content.decode()
    spec = parse_question_text(text, BANK_FILE.relative_to(BANK_DIR))
    assert spec.title["en"] == "Loss turns NaN, the order of checks" and spec.rubric[0].weight == 5
    assert client.get(f"/author/questions/{SLUG}/export/?version=1").content.decode() == BANK_FILE.read_text()
    assert AuthoringEvent.objects.filter(kind="exported", actor=author, slug=SLUG).count() == 2

    candidate_page = login(candidate).get(f"/questions/{SLUG}/").content.decode()
    assert "Loss turns NaN, the order of checks" in candidate_page


def test_a_refused_save_shows_the_message_next_to_the_field(login, author):
    question = Question.objects.get(slug=SLUG)
    data = form_data(question)
    data["rubric[1].weight"] = "12"
    response = login(author).post(f"/author/questions/{SLUG}/", data)
    assert response.status_code == 400
    page = response.content.decode()
    assert (
        'data-error-for="rubric[1].weight" role="alert">numerics/nan-loss-checklist.md: rubric[1].weight: must be'
        in page
    )
    assert 'value="12"' in page  # the author's input is kept
    assert not QuestionVersion.objects.exists()


def test_two_authors_editing_at_once_do_not_overwrite_each_other(login, author):
    question = Question.objects.get(slug=SLUG)
    other = make_user("other-author", Role.AUTHOR)
    opened = form_data(question)
    theirs = dict(opened, **{"title.en": "Their title"})
    assert login(other).post(f"/author/questions/{SLUG}/", theirs).status_code == 302
    mine = dict(opened, **{"title.en": "My title"})
    response = login(author).post(f"/author/questions/{SLUG}/", mine)
    assert response.status_code == 400
    assert "other-author saved version 2" in response.content.decode()
    assert Question.objects.get(slug=SLUG).title_en == "Their title"


def test_new_question_from_a_copy(login, author):
    client = login(author)
    page = client.get(f"/author/questions/new/?from={SLUG}").content.decode()
    assert 'name="slug" id="f-slug" value=""' in page and "learning rate | lr | 学习率" in page
    question = Question.objects.get(slug=SLUG)
    data = form_data(question, slug="nan-loss-quick-triage")
    data.pop("base")
    response = client.post("/author/questions/new/", data)
    assert response.status_code == 302 and response["Location"] == "/author/questions/nan-loss-quick-triage/"
    created = Question.objects.get(slug="nan-loss-quick-triage")
    assert created.origin == Question.Origin.BROWSER
    assert AuthoringEvent.objects.get(slug="nan-loss-quick-triage").kind == "created"
    listing = client.get("/author/questions/?q=quick-triage").content.decode()
    assert "v1 by auth" in listing


def test_import_upload(login, author):
    client = login(author)
    text = BANK_FILE.read_text().replace("difficulty: 3", "difficulty: 4")
    upload = SimpleUploadedFile(f"{SLUG}.md", text.encode(), content_type="text/markdown")
    response = client.post("/author/questions/import/", {"file": upload, "into": SLUG}, follow=True)
    assert "Imported nan-loss-checklist.md as version 2" in response.content.decode()
    assert Question.objects.get(slug=SLUG).difficulty == 4

    broken = SimpleUploadedFile(f"{SLUG}.md", text.replace("difficulty: 4", "difficulty: 0").encode())
    response = client.post("/author/questions/import/", {"file": broken}, follow=True)
    assert "nan-loss-checklist.md: difficulty: must be an integer 1–5, got 0" in response.content.decode()
    hostile = SimpleUploadedFile("../../etc/passwd.md", b"\x00\xff binary")
    response = client.post("/author/questions/import/", {"file": hostile}, follow=True)
    assert "not UTF-8 text" in response.content.decode()
    assert QuestionVersion.objects.filter(slug=SLUG).count() == 2


def test_pages_in_chinese(login, author):
    client = login(author)
    client.cookies["django_language"] = "zh-hans"
    page = client.get(f"/author/questions/{SLUG}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert '<html lang="zh-hans">' in page
    assert "一段 PyTorch 训练代码的 Loss 一直是 NaN" in page  # the title in the page language


def test_references_are_edited_as_lines_and_a_wrong_one_is_named_beside_them(login, author):
    client = login(author)
    slug = "ascend-docker-device-mounting"
    page = client.get(f"/author/questions/{slug}/").content.decode()
    assert 'name="references" id="f-references"' in page
    assert "MindCluster user guide | Ascend Docker Runtime default mounted content | 7.3.0" in page
    question = Question.objects.get(slug=SLUG)
    data = form_data(question)
    data["references"] = "PyTorch documentation: torch.amp | GradScaler | 2.5 | www.example.org"
    refused = client.post(f"/author/questions/{SLUG}/", data)
    assert refused.status_code == 400
    assert 'data-error-for="references" role="alert">numerics/nan-loss-checklist.md: references[0].url' in (
        refused.content.decode()
    )
    data["references"] = (
        "PyTorch documentation: torch.amp | GradScaler | 2.5 | https://pytorch.org/docs/stable/amp.html"
    )
    assert client.post(f"/author/questions/{SLUG}/", data).status_code == 302
    assert Question.objects.get(slug=SLUG).references == [
        {
            "title": "PyTorch documentation: torch.amp",
            "section": "GradScaler",
            "version": "2.5",
            "url": "https://pytorch.org/docs/stable/amp.html",
        }
    ]
    exported = client.get(f"/author/questions/{SLUG}/export/").content.decode()
    assert 'section: "GradScaler", version: "2.5", url: "https://pytorch.org/docs/stable/amp.html"}' in exported

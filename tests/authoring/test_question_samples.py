"""Sample answers typed beside the rubric check are saved with the question's version, come back on reload,
show in the history, and stay out of the exported file. Through HTTP, as the editor page posts its form."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from authoring import question_editing as editing
from authoring.models import AuthoringEvent, QuestionVersion
from authoring.question_forms import as_post_data
from questions.bankfile import BANK_DIR, parse_question
from questions.models import Question

pytestmark = pytest.mark.django_db
SLUG = "nan-loss-checklist"
BANK_FILE = BANK_DIR / "numerics" / f"{SLUG}.md"
GOOD = "The learning rate is too high: I would lower it by 10x and add warm-up, then check the inputs for NaN."
VAGUE = "I would restart the job and hope it goes away."
TITLE = {"title.en": "NaN loss: what first?"}


def form(samples: list[str], **changes: str) -> dict:
    """The editor's form for the bank file, as the page posts it (samples are textareas named "sample")."""
    question = Question.objects.get(slug=SLUG)
    data = as_post_data(editing.spec_to_fields(parse_question(BANK_FILE)))
    data.update(changes)
    return {**data, "base": editing.state_token(question), "sample": samples}


def test_samples_are_saved_with_the_version_and_shown_on_reload(login, author):
    client = login(author)
    response = client.post(f"/author/questions/{SLUG}/", form([GOOD, "", VAGUE], **TITLE))
    assert response.status_code == 302
    latest = QuestionVersion.objects.get(slug=SLUG, number=2)
    assert latest.sample_answers == [GOOD, VAGUE]  # the blank box is not kept

    page = client.get(f"/author/questions/{SLUG}/")
    html = page.content.decode()
    assert f'id="sample-1" form="question-form" rows="5">{GOOD}</textarea>' in html
    assert f'id="sample-2" form="question-form" rows="5">{VAGUE}</textarea>' in html
    assert 'id="sample-3" form="question-form" rows="5"></textarea>' in html  # a blank one for the next
    # The rubric check on reload scores them: the good one covers the learning-rate point, the vague one nothing.
    results = {r["name"]: r for r in page.context["results"]}
    assert results["Sample answer 1"]["score"] > results["Sample answer 2"]["score"] == 0
    assert "2 sample answers kept" in html

    export = client.get(f"/author/questions/{SLUG}/export/").content.decode()
    assert "NaN loss: what first?" in export and GOOD not in export and VAGUE not in export


def test_changing_only_the_samples_makes_a_version_of_the_same_file(login, author, candidate):
    client = login(author)
    assert client.post(f"/author/questions/{SLUG}/", form([GOOD], **TITLE)).status_code == 302
    question = Question.objects.get(slug=SLUG)
    served = question.content_hash
    response = client.post(f"/author/questions/{SLUG}/", form([GOOD, VAGUE], **TITLE), follow=True)
    html = response.content.decode()
    assert "Saved version 3" in html
    v2, v3 = QuestionVersion.objects.filter(slug=SLUG, number__in=[2, 3]).order_by("number")
    assert v3.text == v2.text and v3.sample_answers == [GOOD, VAGUE]
    assert Question.objects.get(slug=SLUG).content_hash == served  # candidates' question is untouched
    assert "Sample answers changed" in html and f"+{VAGUE}" in html
    event = AuthoringEvent.objects.filter(slug=SLUG, kind="edited").order_by("-pk").first()
    assert event.detail == {"version": 3, "applied": False, "samples": 2}

    # Saving the same file and the same samples again changes nothing.
    again = client.post(f"/author/questions/{SLUG}/", form([GOOD, VAGUE], **TITLE))
    assert again.status_code == 400 and "Nothing changed" in again.content.decode()
    assert not QuestionVersion.objects.filter(slug=SLUG, number=4).exists()


def test_a_page_opened_before_a_samples_only_save_is_refused(login, author):
    client = login(author)
    opened = form([GOOD])
    # Only the samples changed: version 1 keeps the bank file, with them.
    assert client.post(f"/author/questions/{SLUG}/", opened).status_code == 302
    stale = dict(opened, sample=[VAGUE])
    response = client.post(f"/author/questions/{SLUG}/", stale)
    assert response.status_code == 400 and "auth saved version 1" in response.content.decode()
    assert QuestionVersion.objects.get(slug=SLUG, number=1).sample_answers == [GOOD]
    assert QuestionVersion.objects.get(slug=SLUG, number=1).text == BANK_FILE.read_text(encoding="utf-8")


def test_an_imported_file_keeps_the_samples(login, author):
    client = login(author)
    client.post(f"/author/questions/{SLUG}/", form([GOOD], **TITLE))
    text = BANK_FILE.read_text(encoding="utf-8").replace("difficulty: 3", "difficulty: 4")
    upload = SimpleUploadedFile(f"{SLUG}.md", text.encode(), content_type="text/markdown")
    client.post("/author/questions/import/", {"file": upload, "into": SLUG})
    latest = editing.latest_version(SLUG)
    assert latest.number == 3 and latest.sample_answers == [GOOD]


def test_too_many_samples_are_refused_and_kept_on_the_page(login, author):
    samples = [f"{GOOD} ({n})" for n in range(editing.MAX_SAMPLES + 1)]
    response = login(author).post(f"/author/questions/{SLUG}/", form(samples, **{"title.en": "NaN loss?"}))
    assert response.status_code == 400
    html = response.content.decode()
    assert "At most 5 sample answers are kept; remove 1." in html
    assert samples[-1] in html
    assert not QuestionVersion.objects.exists()

"""The candidate's interview pages and API, through HTTP, as a candidate uses them."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from interviews import steering, taking
from interviews.models import AnswerSnapshot, Interview, InterviewItem

pytestmark = pytest.mark.django_db


def _age(interview: Interview, minutes: int) -> None:
    Interview.objects.filter(pk=interview.pk).update(started_at=timezone.now() - timedelta(minutes=minutes))


def _secret_texts(item: InterviewItem) -> list[str]:
    """Phrases only the interviewers may see: the reference answer and the rubric points."""
    texts = []
    for html in (item.question.answer_html_en, item.question.answer_html_zh):
        plain = re.sub(r"<[^>]+>", " ", html)
        texts += [s.strip() for s in re.split(r"[.\n。]", plain) if len(s.strip()) > 40][:3]
    for point in item.question.rubric.all():
        texts += [point.text_en, point.text_zh]
    return [t for t in texts if t]


def test_before_the_start_the_page_shows_the_plan_and_a_start_button(make_interview, candidate, login):
    interview = make_interview()
    client = login(candidate)
    page = client.get(f"/interviews/take/{interview.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Training infra loop" in html and "45 minutes" in html
    assert "Start the interview" in html
    question = interview.items.get(kind="question").question
    # The questions stay hidden until the clock runs.
    assert question.title_en not in html
    item = interview.items.get(kind="question")
    assert client.get(f"/interviews/take/{interview.pk}/items/{item.pk}/").status_code == 302


def test_start_then_items_with_a_countdown(make_interview, candidate, login):
    interview = make_interview()
    client = login(candidate)
    response = client.post(f"/interviews/take/{interview.pk}/start/")
    assert response.status_code == 302
    interview.refresh_from_db()
    assert interview.status == Interview.Status.IN_PROGRESS
    html = client.get(f"/interviews/take/{interview.pk}/").content.decode()
    question = interview.items.get(kind="question").question
    assert question.title_en in html
    assert 'data-countdown="interview"' in html
    assert "Finish interview" in html and "Open the lab" in html


def test_start_is_refused_outside_the_window_with_the_reason(make_interview, candidate, login):
    interview = make_interview()
    Interview.objects.filter(pk=interview.pk).update(window_opens_at=timezone.now() + timedelta(hours=1))
    client = login(candidate)
    page = client.post(f"/interviews/take/{interview.pk}/start/", follow=True)
    assert "the interview opens at" in page.content.decode()
    response = client.post(f"/api/interviews/take/{interview.pk}/start/")
    assert response.status_code == 400
    assert "opens at" in response.json()["error"]["fields"]["detail"][0]


def test_api_state_autosave_and_done(make_interview, candidate, login):
    interview = taking.start(make_interview(time_box=10))
    item = interview.items.get(kind="question")
    client = login(candidate)
    url = f"/api/interviews/take/{interview.pk}/items/{item.pk}/draft/"
    response = client.put(url, {"text": "NCCL all-reduce"}, content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["draft"] == "NCCL all-reduce" and body["state"] == "open"
    assert 0 < body["ends_in"] <= 600
    client.put(url, {"text": "NCCL all-reduce, ring"}, content_type="application/json")
    assert AnswerSnapshot.objects.filter(item=item).count() == 2

    state = client.get(f"/api/interviews/take/{interview.pk}/").json()
    assert state["status"] == "in_progress"
    assert 0 < state["seconds_left"] <= 45 * 60
    row = next(i for i in state["items"] if i["id"] == item.pk)
    assert row["draft"] == "NCCL all-reduce, ring" and row["opened"] and not row["closed"]

    response = client.post(f"/api/interviews/take/{interview.pk}/items/{item.pk}/done/")
    assert response.status_code == 200 and response.json()["closed"]
    item.refresh_from_db()
    assert item.answer.text == "NCCL all-reduce, ring"
    response = client.put(url, {"text": "changed my mind"}, content_type="application/json")
    assert response.status_code == 400
    assert "time is up" in response.json()["error"]["fields"]["detail"][0]


def test_question_page_autosave_form_and_read_only_after_done(make_interview, candidate, login):
    interview = taking.start(make_interview())
    item = interview.items.get(kind="question")
    client = login(candidate)
    page = client.get(f"/interviews/take/{interview.pk}/items/{item.pk}/").content.decode()
    # Not opened yet: the prompt is behind an Open button (that starts any time box).
    assert "Open the question" in page and 'id="answer"' not in page
    client.post(f"/interviews/take/{interview.pk}/items/{item.pk}/open/")
    page = client.get(f"/interviews/take/{interview.pk}/items/{item.pk}/").content.decode()
    assert item.question.localized("prompt_html", "en")[:60] in page
    assert 'id="answer"' in page and "readonly" not in page and "Done with this item" in page
    # Without JavaScript the Done button posts the text itself.
    response = client.post(
        f"/interviews/take/{interview.pk}/items/{item.pk}/done/", {"text": "posted with the button"}, follow=True
    )
    assert "Item 1 is handed in" in response.content.decode()
    page = client.get(f"/interviews/take/{interview.pk}/items/{item.pk}/").content.decode()
    assert "readonly" in page and "posted with the button" in page


def test_lab_item_opens_the_pinned_attempt_in_the_workspace(make_interview, candidate, login):
    interview = taking.start(make_interview())
    item = interview.items.get(kind="lab")
    client = login(candidate)
    response = client.post(f"/interviews/take/{interview.pk}/items/{item.pk}/open/")
    item.refresh_from_db()
    assert item.attempt_id and item.attempt.seed == item.seed
    assert response.status_code == 302
    assert response["Location"].startswith(f"/labs/attempts/{item.attempt_id}/?back=")
    workspace = client.get(response["Location"]).content.decode()
    assert "Back to the interview" in workspace and f'href="/interviews/take/{interview.pk}/"' in workspace


def test_workspace_back_link_is_only_a_local_path(make_interview, candidate, login):
    interview = taking.start(make_interview())
    item = taking.open_item(interview.items.get(kind="lab"))
    client = login(candidate)
    page = client.get(f"/labs/attempts/{item.attempt_id}/?back=//evil.example/x").content.decode()
    assert 'href="//evil.example' not in page and "Back to the interview" not in page


def test_refusal_after_time_is_up_and_the_awaiting_scoring_page(make_interview, candidate, login):
    interview = taking.start(make_interview())
    item = interview.items.get(kind="question")
    client = login(candidate)
    url = f"/api/interviews/take/{interview.pk}/items/{item.pk}/draft/"
    assert client.put(url, {"text": "in time"}, content_type="application/json").status_code == 200
    _age(interview, 46)
    response = client.put(url, {"text": "too late"}, content_type="application/json")
    assert response.status_code == 400
    assert "time is up" in response.json()["error"]["fields"]["detail"][0]
    assert client.get(f"/api/interviews/take/{interview.pk}/").json()["status"] == "awaiting_scoring"
    page = client.get(f"/interviews/take/{interview.pk}/").content.decode()
    assert "awaiting scoring" in page and "Finish interview" not in page
    page = client.get(f"/interviews/take/{interview.pk}/items/{item.pk}/").content.decode()
    assert "readonly" in page and "in time" in page and "too late" not in page
    response = client.post(f"/interviews/take/{interview.pk}/items/{item.pk}/done/", {"text": "x"}, follow=True)
    assert "time is up" in response.content.decode()


def test_finish_early(make_interview, candidate, login):
    interview = taking.start(make_interview())
    client = login(candidate)
    response = client.post(f"/api/interviews/take/{interview.pk}/finish/")
    assert response.status_code == 200 and response.json()["status"] == "awaiting_scoring"
    assert all(row["closed"] for row in response.json()["items"])
    response = client.post(f"/api/interviews/take/{interview.pk}/finish/")
    assert response.status_code == 400
    assert "not in progress" in response.json()["error"]["fields"]["detail"][0]
    page = client.post(f"/interviews/take/{interview.pk}/finish/", follow=True).content.decode()
    assert "not in progress" in page and "awaiting scoring" in page


def test_finish_form_hands_in_everything(make_interview, candidate, login):
    interview = taking.start(make_interview())
    client = login(candidate)
    client.post(f"/interviews/take/{interview.pk}/finish/")
    interview.refresh_from_db()
    assert interview.status == Interview.Status.AWAITING_SCORING


def test_an_item_of_another_interview_is_404(make_interview, candidate, login, interviewer):
    mine = taking.start(make_interview())
    other = taking.start(make_interview())
    stranger = other.items.get(kind="question")
    client = login(candidate)
    for method, url in [
        ("put", f"/api/interviews/take/{mine.pk}/items/{stranger.pk}/draft/"),
        ("post", f"/api/interviews/take/{mine.pk}/items/{stranger.pk}/done/"),
        ("get", f"/interviews/take/{mine.pk}/items/{stranger.pk}/"),
        ("post", f"/interviews/take/{mine.pk}/items/{stranger.pk}/open/"),
    ]:
        response = getattr(client, method)(url, {"text": "x"}, content_type="application/json")
        assert response.status_code == 404, url
    stranger.refresh_from_db()
    assert stranger.draft == ""


def test_someone_elses_interview_is_404(make_interview, login, interviewer):
    from core.roles import Role
    from tests.conftest import make_user

    interview = taking.start(make_interview())
    other = make_user("other-cand", Role.CANDIDATE)
    for client in (login(other), login(interviewer)):
        assert client.get(f"/interviews/take/{interview.pk}/").status_code == 404
        assert client.get(f"/api/interviews/take/{interview.pk}/").status_code == 404
        assert client.post(f"/api/interviews/take/{interview.pk}/start/").status_code == 404


def test_messages_from_the_interviewers_reach_the_candidate(make_interview, candidate, login, interviewer):
    interview = taking.start(make_interview())
    lab = taking.open_item(interview.items.get(kind="lab"))
    steering.release_hint(interview, lab, interviewer)
    steering.send_note(interview, interviewer, "Ten minutes left, wrap up")
    steering.add_time(interview, interviewer, 5)
    client = login(candidate)
    messages = client.get(f"/api/interviews/take/{interview.pk}/").json()["messages"]
    lab_hint = lab.attempt.version.spec["hints"][0]["en"]
    assert [m["kind"] for m in messages] == ["hint_released", "note_sent", "time_added"]
    assert messages[0]["text"] == lab_hint and messages[0]["item"] == lab.position + 1
    assert messages[1]["text"] == "Ten minutes left, wrap up"
    assert "5 minutes were added" in messages[2]["text"]
    page = client.get(f"/interviews/take/{interview.pk}/").content.decode()
    assert "Ten minutes left, wrap up" in page


def test_lab_hint_text_follows_the_page_language(make_interview, candidate, login, interviewer):
    interview = taking.start(make_interview())
    lab = taking.open_item(interview.items.get(kind="lab"))
    steering.release_hint(interview, lab, interviewer)
    client = login(candidate)
    response = client.get(f"/api/interviews/take/{interview.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.json()["messages"][0]["text"] == lab.attempt.version.spec["hints"][0]["zh"]


def test_preview_renders_sanitised_markdown(candidate, login):
    client = login(candidate)
    response = client.post(
        "/api/interviews/preview/", {"text": "**bold** <script>alert(1)</script>"}, content_type="application/json"
    )
    assert response.status_code == 200
    html = response.json()["html"]
    assert "<strong>bold</strong>" in html and "<script>" not in html


def test_no_reference_answer_or_rubric_in_any_candidate_response(make_interview, candidate, login):
    interview = taking.start(make_interview())
    item = interview.items.get(kind="question")
    secrets = _secret_texts(item)
    assert secrets, "the bank question should have a reference answer and rubric"
    client = login(candidate)
    client.post(f"/interviews/take/{interview.pk}/items/{item.pk}/open/")
    base = f"/interviews/take/{interview.pk}/"
    bodies = [
        client.get(base).content.decode(),
        client.get(f"{base}items/{item.pk}/").content.decode(),
        client.get(f"/api{base}").content.decode(),
        client.put(
            f"/api{base}items/{item.pk}/draft/", {"text": "an answer"}, content_type="application/json"
        ).content.decode(),
        client.post(f"/api{base}items/{item.pk}/done/").content.decode(),
        client.post(f"/api{base}finish/").content.decode(),
        client.get(base).content.decode(),
        client.get(f"{base}items/{item.pk}/").content.decode(),
    ]
    for body in bodies:
        for secret in secrets:
            assert secret not in body
        assert "coverage" not in body.lower() and "rubric" not in body.lower()

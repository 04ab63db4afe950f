import re

import pytest

from questions.models import PracticeAnswer, Question, Reveal

SLUG = "nan-loss-checklist"
GOOD_ANSWER = (
    "First lower the learning rate by 10x. Then check the input data for NaN with torch.isfinite. "
    "With fp16 use GradScaler. Watch the grad norm and apply clip_grad_norm_. "
    "Finally use detect_anomaly to find the first bad op."
)


def result_slugs(html: str) -> list[str]:
    return re.findall(r'<h2><a href="/questions/([a-z0-9-]+)/">', html)


@pytest.fixture
def cand_client(login, candidate, bank):
    return login(candidate)


def test_bank_home_lists_topics_with_counts_and_paginates(cand_client):
    html = cand_client.get("/questions/").content.decode()
    assert "80 questions" in html
    assert re.search(r"Numerics &amp; mixed precision <span class=\"count\">4</span>", html)
    assert len(result_slugs(html)) == 20
    page4 = cand_client.get("/questions/?page=4").content.decode()
    assert len(result_slugs(page4)) == 20 and "Page 4 of 4" in page4


def test_filters_combine(cand_client):
    html = cand_client.get("/questions/?topic=numerics&difficulty=3").content.decode()
    slugs = result_slugs(html)
    assert SLUG in slugs
    assert all(Question.objects.get(slug=s).topic.slug == "numerics" for s in slugs)
    assert all(Question.objects.get(slug=s).difficulty == 3 for s in slugs)
    tagged = result_slugs(cand_client.get("/questions/?tag=nccl").content.decode())
    assert tagged and all(Question.objects.get(slug=s).tags.filter(slug="nccl").exists() for s in tagged)
    assert result_slugs(cand_client.get("/questions/?has_lab=yes").content.decode()) == []


def test_invalid_filters_are_explained_not_500(cand_client):
    response = cand_client.get("/questions/?difficulty=9&topic=astrology&tag=bad tag!")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Difficulty: Select a valid choice. 9 is not one of the available choices." in html
    assert "Topic: Select a valid choice." in html
    assert "Tag:" in html


@pytest.mark.parametrize(
    "query,expected",
    [
        ("显存泄漏", "inference-gpu-memory-creep"),
        ("memory leak", "inference-gpu-memory-creep"),
        ("NCCL timeout", "nccl-timeout-single-node"),
        ("梯度裁剪", "gradient-explosion-vanishing"),
    ],
)
def test_search_in_both_languages_finds_the_right_question(cand_client, query, expected):
    html = cand_client.get("/questions/", {"q": query}).content.decode()
    slugs = result_slugs(html)
    assert expected in slugs[:4], slugs
    assert "<mark>" in html


def test_chinese_ui_shows_chinese_titles(cand_client):
    cand_client.post("/i18n/setlang/", {"language": "zh-hans"})
    html = cand_client.get("/questions/", {"q": "NaN"}).content.decode()
    assert "一段 PyTorch 训练代码的 Loss 一直是 <mark>NaN</mark>" in html


def test_reference_is_hidden_until_the_candidate_answers(cand_client, candidate):
    html = cand_client.get(f"/questions/{SLUG}/").content.decode()
    assert "Reference answer" not in html and 'data-testid="reference-answer"' not in html
    question = Question.objects.get(slug=SLUG)
    assert question.rubric.first().text_en not in html
    response = cand_client.post(f"/questions/{SLUG}/answer/", {"text": GOOD_ANSWER})
    answer = PracticeAnswer.objects.get(user=candidate)
    assert response.status_code == 302 and response["Location"] == f"/questions/{SLUG}/attempts/{answer.pk}/"
    assert Reveal.objects.get(user=candidate, question=question).via == "answer"
    attempt = cand_client.get(response["Location"]).content.decode()
    assert "Rubric concepts covered: " in attempt
    assert "✓ learning rate" in attempt and "✓ GradScaler" in attempt
    assert 'data-state="found"' in attempt and "Earned by:" in attempt  # each point's state and its sentence
    assert "stays in the graph" not in attempt  # sanity: no stray text
    assert question.rubric.first().text_en in attempt
    assert 'data-testid="reference-answer"' in cand_client.get(f"/questions/{SLUG}/").content.decode()


def test_empty_answer_is_rejected_with_a_message(cand_client, candidate):
    response = cand_client.post(f"/questions/{SLUG}/answer/", {"text": "   "})
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    assert not PracticeAnswer.objects.exists() and not Reveal.objects.exists()


def test_reveal_without_answering_is_recorded(cand_client, candidate):
    response = cand_client.post(f"/questions/{SLUG}/reveal/")
    assert response.status_code == 302
    html = cand_client.get(f"/questions/{SLUG}/").content.decode()
    assert "You revealed this without answering on" in html
    assert Reveal.objects.get(user=candidate).via == "reveal"


def test_self_score_and_progress(cand_client, candidate):
    cand_client.post(f"/questions/{SLUG}/answer/", {"text": GOOD_ANSWER})
    answer = PracticeAnswer.objects.get(user=candidate)
    url = f"/questions/{SLUG}/attempts/{answer.pk}/"
    keys = list(answer.question.rubric.values_list("key", flat=True))
    bad = cand_client.post(url, {keys[0]: "7"})
    assert bad.status_code == 200 and "Select a valid choice" in bad.content.decode()
    response = cand_client.post(url, {k: "2" for k in keys})
    assert response.status_code == 302
    answer.refresh_from_db()
    assert answer.self_score_percent == 100 and answer.self_scores == {k: 2 for k in keys}
    assert "Your self-score: 100%" in cand_client.get(url).content.decode()
    cand_client.post(f"/questions/{SLUG}/answer/", {"text": "A second, shorter try: lower the learning rate."})
    history = cand_client.get(f"/questions/{SLUG}/").content.decode()
    assert history.count(f'href="/questions/{SLUG}/attempts/') == 2, "both attempts are listed on the question"
    progress = cand_client.get("/questions/progress/").content.decode()
    row = re.search(
        r"numerics\">Numerics &amp; mixed precision</a></td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)",
        progress,
    )
    assert row.groups() == ("1", "1", "0", "4")
    assert 'id="progress-data"' in progress


def test_attempts_of_others_are_not_reachable(client, login, candidate, bank):
    from core.roles import Role
    from tests.conftest import make_user

    login(candidate).post(f"/questions/{SLUG}/answer/", {"text": GOOD_ANSWER})
    answer = PracticeAnswer.objects.get(user=candidate)
    other = make_user("other", Role.CANDIDATE)
    assert login(other).get(f"/questions/{SLUG}/attempts/{answer.pk}/").status_code == 404


def test_interviewers_see_reference_without_answering(login, interviewer, bank):
    html = login(interviewer).get(f"/questions/{SLUG}/").content.decode()
    assert 'data-testid="reference-answer"' in html


def test_candidate_markdown_is_sanitised_on_the_attempt_page(cand_client, candidate):
    cand_client.post(
        f"/questions/{SLUG}/answer/", {"text": "<script>alert(1)</script> [x](javascript:alert(2)) **ok**"}
    )
    answer = PracticeAnswer.objects.get(user=candidate)
    html = cand_client.get(f"/questions/{SLUG}/attempts/{answer.pk}/").content.decode()
    assert "<script>alert(1)" not in html and "javascript:alert(2)" not in html
    assert "<strong>ok</strong>" in html


def test_content_language_toggle(cand_client):
    html = cand_client.get(f"/questions/{SLUG}/?content=zh").content.decode()
    assert "你拿到一段 PyTorch 训练脚本" in html and "查看中文" not in html


def test_search_respects_filters(cand_client):
    everywhere = result_slugs(cand_client.get("/questions/", {"q": "OOM"}).content.decode())
    within = result_slugs(cand_client.get("/questions/", {"q": "OOM", "topic": "memory"}).content.decode())
    assert set(within) < set(everywhere)
    assert within and all(Question.objects.get(slug=s).topic.slug == "memory" for s in within)


@pytest.mark.parametrize(
    ("language", "explanation"),
    [("en", "1F1B does not shrink the bubble"), ("zh-hans", "1F1B 并不缩小气泡")],
)
def test_a_wrong_claim_is_shown_with_why_it_is_wrong(cand_client, candidate, language, explanation):
    slug = "pipeline-parallel-bubbles"
    wrong = "Compared to GPipe, 1F1B reduces the bubble because it interleaves forward and backward passes."
    response = cand_client.post(f"/questions/{slug}/answer/", {"text": wrong})
    page = cand_client.get(response["Location"], HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert 'data-testid="contradiction"' in page and explanation in page
    assert "1F1B reduces the bubble because" in page  # the sentence that lost the point is quoted
    assert 'data-key="gpipe-vs-1f1b" data-state="contradicted"' in page
    answer = PracticeAnswer.objects.get(user=candidate, question__slug=slug)
    [point] = [p for p in answer.coverage if p["key"] == "gpipe-vs-1f1b"]
    assert point["contradicted"] and point["fraction"] == 0

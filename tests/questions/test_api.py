import pytest
from rest_framework.authtoken.models import Token

from core.roles import Role
from questions.models import PracticeAnswer, Reveal
from tests.conftest import make_user

SLUG = "nan-loss-checklist"
ANSWER = "Lower the learning rate, check input data with isfinite, use GradScaler with fp16, clip_grad_norm_."


@pytest.fixture
def api(client, candidate, bank):
    token = Token.objects.create(user=candidate)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token.key}"
    return client


def test_topics_with_counts(api):
    body = api.get("/api/topics/").json()
    by_slug = {t["slug"]: t for t in body["results"]}
    assert sum(t["question_count"] for t in by_slug.values()) == 80
    assert by_slug["numerics"]["name_zh"] == "数值稳定性与混合精度"


def test_question_list_filters_and_pagination(api):
    body = api.get("/api/questions/", {"topic": "distributed-training", "page_size": 5}).json()
    assert body["count"] == 13 and len(body["results"]) == 5 and body["next"]
    assert {q["topic"] for q in body["results"]} == {"distributed-training"}
    first = body["results"][0]
    assert set(first) == {
        "slug",
        "topic",
        "difficulty",
        "tags",
        "title_en",
        "title_zh",
        "has_lab",
        "related_labs",
        "source",
    }


@pytest.mark.parametrize(
    "query,expected", [("显存泄漏", "inference-gpu-memory-creep"), ("NCCL timeout", "nccl-timeout-single-node")]
)
def test_question_search(api, query, expected):
    slugs = [q["slug"] for q in api.get("/api/questions/", {"q": query}).json()["results"]]
    assert expected in slugs[:4]


def test_bad_filters_are_a_400_naming_the_field(api):
    response = api.get("/api/questions/", {"difficulty": "hard"})
    assert response.status_code == 400
    assert "difficulty" in response.json()["error"]["fields"]


def test_detail_withholds_reference_until_unlocked(api, candidate):
    body = api.get(f"/api/questions/{SLUG}/").json()
    assert body["answer_unlocked"] is False
    assert not {"answer_en", "answer_zh", "answer_html_en", "rubric"} & set(body)
    assert body["prompt_en"].startswith("You are handed a PyTorch training script")
    revealed = api.post(f"/api/questions/{SLUG}/reveal/").json()
    assert revealed["answer_unlocked"] is True and len(revealed["rubric"]) == 6
    assert Reveal.objects.get(user=candidate).via == "reveal"


def test_practice_answer_create_list_and_self_score(api, candidate):
    response = api.post("/api/practice-answers/", {"question": SLUG, "text": ANSWER}, content_type="application/json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["coverage_percent"] > 0
    assert {c["key"] for c in body["coverage"]} == {
        "learning-rate",
        "dirty-data",
        "fp16-range",
        "unstable-ops",
        "exploding-gradients",
        "anomaly-detection",
    }
    assert body["reference"]["answer_en"].startswith("Work from the most common cause")
    assert api.get(f"/api/questions/{SLUG}/").json()["answer_unlocked"] is True
    answer_id = body["id"]
    scores = {c["key"]: 1 for c in body["coverage"]}
    scored = api.post(
        f"/api/practice-answers/{answer_id}/self-score/", {"scores": scores}, content_type="application/json"
    )
    assert scored.status_code == 200 and scored.json()["self_score_percent"] == 50
    listed = api.get("/api/practice-answers/", {"question": SLUG}).json()
    assert [a["id"] for a in listed["results"]] == [answer_id]


def test_self_score_rejects_incomplete_or_out_of_range(api):
    answer_id = api.post(
        "/api/practice-answers/", {"question": SLUG, "text": ANSWER}, content_type="application/json"
    ).json()["id"]
    url = f"/api/practice-answers/{answer_id}/self-score/"
    missing = api.post(url, {"scores": {"learning-rate": 2}}, content_type="application/json")
    assert missing.status_code == 400 and "Missing: " in missing.json()["error"]["fields"]["scores"][0]
    too_high = api.post(url, {"scores": {"learning-rate": 5}}, content_type="application/json")
    assert too_high.status_code == 400


def test_practice_answer_validation(api):
    empty = api.post("/api/practice-answers/", {"question": SLUG, "text": "  "}, content_type="application/json")
    assert empty.status_code == 400 and "text" in empty.json()["error"]["fields"]
    unknown = api.post("/api/practice-answers/", {"question": "nope", "text": "x"}, content_type="application/json")
    assert unknown.status_code == 400 and "question" in unknown.json()["error"]["fields"]
    huge = api.post("/api/practice-answers/", {"question": SLUG, "text": "x" * 20_001}, content_type="application/json")
    assert huge.status_code == 400 and "text" in huge.json()["error"]["fields"]
    assert not PracticeAnswer.objects.exists()


def test_candidates_see_only_their_own_practice_answers(api, client, candidate, bank):
    mine = api.post(
        "/api/practice-answers/", {"question": SLUG, "text": ANSWER}, content_type="application/json"
    ).json()["id"]
    other = make_user("other", Role.CANDIDATE)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.objects.create(user=other).key}"
    assert client.get("/api/practice-answers/").json()["count"] == 0
    assert client.get(f"/api/practice-answers/{mine}/").status_code == 404
    assert (
        client.post(
            f"/api/practice-answers/{mine}/self-score/", {"scores": {}}, content_type="application/json"
        ).status_code
        == 404
    )
    # And the other candidate's detail view of the question is still locked.
    assert client.get(f"/api/questions/{SLUG}/").json()["answer_unlocked"] is False


def test_anonymous_gets_nothing(client, bank):
    assert client.get("/api/questions/").status_code == 403

"""Every interview page and endpoint, for every role: who gets in, and that nobody else learns anything.

The routes are read from the URL configuration, so an endpoint added later is in the matrix without
anyone remembering to add it; a route with a parameter this file has no value for fails the test.
"""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from core.roles import Role
from interviews import scheduling, taking
from interviews.loops import ItemSpec, save_template
from interviews.models import Event, Interview
from labs import services as lab_services
from questions.models import PracticeAnswer
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
# 405: the method is refused before anything is looked up, so it says nothing about the interview.
DENIED = {302, 401, 403, 404, 405}


def _routes(patterns, prefix: str = "") -> list[tuple[str, str]]:
    """(full route with <converters>, name) for every pattern under the interviews pages and API."""
    found = []
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found += _routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and route.startswith(("interviews/", "api/interviews/")):
            found.append((route, entry.name or ""))
    return found


ROUTES = _routes(get_resolver().url_patterns)


def _is_candidate_route(route: str) -> bool:
    return "/take/" in route or "/join/" in route or route.endswith("preview/")


def _fill(route: str, values: dict) -> str:
    import re

    def value(match: re.Match) -> str:
        name = match.group(2)
        if name not in values:
            pytest.fail(f"{route}: no value for <{name}>: add one to the authorization matrix")
        return str(values[name])

    filled = re.sub(r"<(?:(\w+):)?(\w+)>", value, route)
    return "/" + filled


@pytest.fixture
def world(make_interview, interviewer, co_interviewer, candidate, question):
    """Interview X (owner ``interviewer``, panel ``intv2``, candidate ``cand``) in progress with its lab open
    and a run started; interview Y of another interviewer and candidate; a template of each interviewer."""
    x = make_interview(panel=[co_interviewer])
    x = taking.start(x)
    lab_item = taking.open_item(x.items.get(kind="lab"))
    question_item = x.items.get(kind="question")
    taking.autosave(question_item, "NCCL all-reduce waits for every rank, so one slow rank stalls all of them.")
    lab_run = lab_services.start_run(lab_item.attempt)
    invitation, _url = scheduling.invite(x, interviewer, "http://testserver/")

    other_owner = make_user("intv3", Role.INTERVIEWER)
    other_candidate = make_user("cand2", Role.CANDIDATE)
    y = make_interview(owner=other_owner)
    Interview.objects.filter(pk=y.pk).update(candidate=other_candidate)
    y = taking.start(Interview.objects.get(pk=y.pk))
    y_invitation, _ = scheduling.invite(y, other_owner, "http://testserver/")
    y_lab = taking.open_item(y.items.get(kind="lab"))
    template = save_template(
        interviewer, title="Loop", instructions="", duration_minutes=30, items=[ItemSpec("question", question.slug)]
    )
    return {
        "x": x, "y": y, "question_item": question_item, "lab_item": lab_item, "lab_run": lab_run,
        "invitation": invitation, "y_invitation": y_invitation, "y_item": y.items.get(kind="question"),
        "y_lab": y_lab, "template": template, "other_owner": other_owner, "other_candidate": other_candidate,
    }  # fmt: skip


def _values(world: dict, route: str) -> dict:
    template_route = "/templates/" in "/" + route
    return {
        "pk": world["template"].pk if template_route else world["x"].pk,
        "item_pk": world["question_item"].pk,
        "invitation_pk": world["invitation"].pk,
        "token": "not-a-real-token-" + "x" * 30,
        "action": "note",
        "fmt": "json",
    }


def _client(client, user):
    client.logout()
    if user is not None:
        client.force_login(user)
    return client


def _state(world: dict) -> tuple:
    x = Interview.objects.get(pk=world["x"].pk)
    return (x.status, x.extra_seconds, Event.objects.count(), x.items.get(kind="question").draft)


def test_the_matrix_covers_every_area():
    names = {name for _route, name in ROUTES}
    # Pages and API of the candidate, the interviewer's pages, live view, review and scorecard.
    for expected in ("take", "detail", "live", "review", "score", "scorecard", "api-interview-live",
                     "api-interview-scorecard", "api-interview-take-item-draft"):  # fmt: skip
        assert expected in names, f"{expected} is not routed"


def test_outsiders_get_nothing_from_any_interview_route(client, world, author, candidate, interviewer):
    """Anonymous, another interview's candidate, an interviewer not on the panel and an author: every route,
    GET and POST, is refused (login, 401/403 or 404) and changes nothing."""
    before = _state(world)
    outsiders = {
        "anonymous": None,
        "other candidate": world["other_candidate"],
        "other interviewer": world["other_owner"],
        "author": author,
    }
    for who, user in outsiders.items():
        http = _client(client, user)
        for route, name in ROUTES:
            if who == "other interviewer" and (
                "<" not in route or ("/templates/" in "/" + route and "edit" not in route)
            ):
                continue  # their own dashboard and forms; interviewers share templates (reading, copying)
            url = _fill(route, _values(world, route))
            for method in ("get", "post"):
                response = getattr(http, method)(url, {}, content_type="application/json")
                if name == "join" or route.endswith("preview/"):
                    continue  # a bogus token is refused below; the preview renders the caller's own text
                assert response.status_code in DENIED, f"{who} {method.upper()} {url} → {response.status_code}"
    assert _state(world) == before


def test_the_candidate_reaches_only_the_candidate_side(client, world, candidate):
    http = _client(client, candidate)
    for route, name in ROUTES:
        url = _fill(route, _values(world, route))
        response = http.get(url)
        if _is_candidate_route(route):
            if name != "join":
                assert response.status_code not in (403, 404), f"candidate GET {url} → {response.status_code}"
        else:
            assert response.status_code in DENIED, f"candidate GET {url} → {response.status_code}"


def test_owner_co_interviewer_and_admin_reach_the_interviewer_side(client, world, co_interviewer, interviewer,
                                                                    staff_admin):  # fmt: skip
    for user in (interviewer, co_interviewer, staff_admin):
        http = _client(client, user)
        for route, name in ROUTES:
            if _is_candidate_route(route):
                continue
            if "/edit/" in route and user is co_interviewer:
                continue  # the template is the owner's to edit
            url = _fill(route, _values(world, route))
            response = http.get(url)
            if name in ("scorecard_export", "api-interview-scorecard") and response.status_code == 403:
                # The combined scorecard opens to an interviewer once their own is submitted; it says so.
                assert "submit" in response.content.decode().lower(), url
                continue
            assert response.status_code not in (403, 404), f"{user} GET {url} → {response.status_code}"


def test_guessed_ids_of_another_interview_item_invitation_attempt_run_and_answer(client, world, candidate,
                                                                                 interviewer):  # fmt: skip
    x, y = world["x"], world["y"]
    # The candidate of X with an item of Y under X's id, and Y's own pages.
    http = _client(client, candidate)
    for url in (
        f"/interviews/take/{x.pk}/items/{world['y_item'].pk}/",
        f"/api/interviews/take/{x.pk}/items/{world['y_item'].pk}/done/",
        f"/interviews/take/{y.pk}/",
        f"/api/interviews/take/{y.pk}/",
        f"/labs/attempts/{world['y_lab'].attempt_id}/",
        f"/api/labs/attempts/{world['y_lab'].attempt_id}/",
    ):
        assert http.get(url).status_code in DENIED, url
    assert (
        http.put(
            f"/api/interviews/take/{x.pk}/items/{world['y_item'].pk}/draft/", {"text": "x"},
            content_type="application/json",
        ).status_code
        == 404
    )  # fmt: skip
    # X's owner: Y's invitation under X's id, Y's live view and scorecard, the candidate's attempt and run.
    http = _client(client, interviewer)
    assert http.post(f"/interviews/{x.pk}/invitations/{world['y_invitation'].pk}/revoke/").status_code == 404
    for url in (f"/interviews/{y.pk}/", f"/api/interviews/{y.pk}/live/", f"/api/interviews/{y.pk}/scorecard/"):
        assert http.get(url).status_code == 404, url
    # The lab attempt and run are the candidate's records: the interviewer watches them through the live view.
    assert http.get(f"/api/labs/attempts/{world['lab_item'].attempt_id}/").status_code == 404
    assert http.get(f"/api/sandbox/runs/{world['lab_run'].run_id}/").status_code in DENIED
    # The interview answer is not part of anyone's practice history, the candidate's included.
    taking.finish_early(x)
    answer = PracticeAnswer.objects.get(interview_item__interview=x)
    for user in (candidate, interviewer, world["other_candidate"]):
        http = _client(client, user)
        assert http.get(f"/api/practice-answers/{answer.pk}/").status_code == 404
        assert http.get(f"/questions/{answer.question.slug}/attempts/{answer.pk}/").status_code == 404


def test_a_bogus_or_foreign_link_signs_nobody_in(client, world):
    response = _client(client, None).get("/interviews/join/" + "y" * 43 + "/")
    assert response.status_code in (404, 410)
    assert "_auth_user_id" not in client.session

"""The invitation link: it signs in its candidate, once, to that interview and nothing else."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import SESSION_KEY as AUTH_USER_KEY
from django.test import Client
from django.utils import timezone

from core.roles import Role
from interviews import access, scheduling, taking
from interviews.models import Event, Invitation
from labs import services as lab_services
from labs.models import Lab
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _link(interview, interviewer) -> str:
    _, url = scheduling.invite(interview, interviewer, "http://testserver")
    return url.removeprefix("http://testserver")


def _open(client: Client, link: str):
    """What a person does with the link: open it (which spends nothing), then press the button."""
    shown = client.get(link)
    if shown.status_code != 200:
        return shown
    assert "Sign in to the interview" in shown.content.decode()
    return client.post(link)


def _signed_in(client: Client):
    return client.session.get(AUTH_USER_KEY)


def test_the_link_signs_the_candidate_in_to_that_interview(make_interview, interviewer, candidate):
    interview = make_interview()
    client = Client()
    client.get("/accounts/login/")  # a session from before the link
    before = client.session.session_key
    response = _open(client, _link(interview, interviewer))
    assert response.status_code == 302 and response["Location"] == f"/interviews/take/{interview.pk}/"
    assert _signed_in(client) == str(candidate.pk)
    assert client.session[access.SESSION_KEY] == interview.pk
    assert client.session.session_key != before  # login() cycled the session
    page = client.get(response["Location"])
    assert page.status_code == 200 and "Start the interview" in page.content.decode()
    assert interview.events.filter(kind=Event.Kind.LINK_OPENED).count() == 1


def test_an_invitation_by_email_makes_the_account_on_first_use(make_interview, interviewer):
    interview = make_interview(by_email=True)
    client = Client()
    response = _open(client, _link(interview, interviewer))
    assert response.status_code == 302
    interview.refresh_from_db()
    assert interview.candidate.email == "ada@example.test"
    assert _signed_in(client) == str(interview.candidate.pk)
    assert not interview.candidate.has_usable_password()


def test_opening_the_link_spends_nothing_until_the_candidate_signs_in(make_interview, interviewer, candidate):
    """A mail scanner or a chat preview fetches the link first: that must not use it up."""
    interview = make_interview()
    link = _link(interview, interviewer)
    scanner = Client()
    for _ in range(2):
        assert scanner.get(link).status_code == 200
    assert _signed_in(scanner) is None and not Invitation.objects.get(interview=interview).used_at
    assert _open(Client(), link).status_code == 302


def test_a_link_works_once(make_interview, interviewer):
    interview = make_interview()
    link = _link(interview, interviewer)
    assert _open(Client(), link).status_code == 302
    second = Client()
    response = _open(second, link)
    assert response.status_code == 410
    assert "already been used, has expired or was withdrawn" in response.content.decode()
    assert _signed_in(second) is None


def test_an_expired_link_fails(make_interview, interviewer):
    interview = make_interview()
    link = _link(interview, interviewer)
    Invitation.objects.filter(interview=interview).update(expires_at=timezone.now() - timedelta(minutes=1))
    client = Client()
    response = _open(client, link)
    assert response.status_code == 410 and _signed_in(client) is None


def test_a_revoked_link_fails(make_interview, interviewer):
    interview = make_interview()
    link = _link(interview, interviewer)
    scheduling.revoke(Invitation.objects.get(interview=interview), interviewer)
    client = Client()
    response = _open(client, link)
    assert response.status_code == 410 and _signed_in(client) is None


def test_a_new_link_withdraws_the_old_one(make_interview, interviewer):
    interview = make_interview()
    old = _link(interview, interviewer)
    new = _link(interview, interviewer)
    assert _open(Client(), old).status_code == 410
    assert _open(Client(), new).status_code == 302


def test_a_link_to_an_interview_that_is_over_fails(make_interview, interviewer):
    interview = taking.start(make_interview())
    link = _link(interview, interviewer)
    taking.finish_early(interview)
    response = _open(Client(), link)
    assert response.status_code == 410 and "over" in response.content.decode()


def test_someone_else_opening_a_used_link_gains_nothing(make_interview, interviewer, candidate, login):
    interview = make_interview()
    link = _link(interview, interviewer)
    _open(Client(), link)
    someone = make_user("someone", Role.CANDIDATE)
    client = login(someone)
    assert _open(client, link).status_code == 410
    assert _signed_in(client) == str(someone.pk)
    assert access.SESSION_KEY not in client.session
    assert client.get(f"/interviews/take/{interview.pk}/").status_code == 404
    assert client.get(f"/api/interviews/take/{interview.pk}/").status_code == 404


def test_a_link_session_reaches_only_its_interview(make_interview, interviewer, candidate):
    interview = taking.start(make_interview())
    lab_item = taking.open_item(interview.items.get(kind="lab"))
    question = interview.items.get(kind="question")
    # The same candidate's practice attempt and second interview are not part of this sign-in.
    practice = lab_services.start_attempt(candidate, Lab.objects.get(pk=lab_item.lab_id))
    other_interview = make_interview()
    client = Client()
    _open(client, _link(interview, interviewer))

    for path in ("/questions/", "/labs/", "/", "/interviews/", f"/labs/attempts/{practice.pk}/",
                 f"/interviews/take/{other_interview.pk}/", "/accounts/password_change/", "/sandbox/"):  # fmt: skip
        response = client.get(path)
        assert response.status_code == 403, path
        assert "This sign-in is for your interview only" in response.content.decode(), path
    for path in ("/api/me/", "/api/labs/", "/api/questions/", f"/api/labs/attempts/{practice.pk}/",
                 f"/api/interviews/take/{other_interview.pk}/"):  # fmt: skip
        response = client.get(path)
        assert response.status_code == 403, path
        assert response.json()["error"]["code"] == "interview_only", path

    base = f"/interviews/take/{interview.pk}/"
    page = client.get(base)
    assert page.status_code == 200
    # No site navigation in a session that reaches nothing else.
    assert 'href="/questions/"' not in page.content.decode()
    assert client.get(f"{base}items/{question.pk}/").status_code == 200
    assert client.get(f"/api{base}").status_code == 200
    response = client.put(
        f"/api{base}items/{question.pk}/draft/", {"text": "from the link session"}, content_type="application/json"
    )
    assert response.status_code == 200
    assert client.get(f"/labs/attempts/{lab_item.attempt_id}/").status_code == 200
    assert client.get(f"/api/labs/attempts/{lab_item.attempt_id}/").status_code == 200
    assert client.get(f"/api/labs/attempts/{lab_item.attempt_id}/timeline/").status_code == 200
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": base})
    assert response.status_code == 302
    # Logging out ends the interview-only session.
    client.post("/accounts/logout/")
    assert _signed_in(client) is None and access.SESSION_KEY not in client.session

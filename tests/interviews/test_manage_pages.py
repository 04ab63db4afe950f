"""The interviewer's pages through HTTP: templates, new interviews, invitations and the dashboard."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.roles import Role
from interviews.models import Event, Interview, InterviewTemplate, Invitation
from labs.models import Lab
from tests.conftest import make_user
from tests.labs.helpers import EXAMPLE, publish

pytestmark = pytest.mark.django_db


def _local(dt) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M")


def _template_post(question, **overrides) -> dict:
    data = {
        "title": "GPU infra loop",
        "instructions": "Think aloud.",
        "duration_minutes": "60",
        "item_ref": [f"question:{question.slug}", f"lab:{EXAMPLE}", ""],
        "item_box": ["10", "", ""],
    }
    data.update(overrides)
    return data


def _interview_post(question, **overrides) -> dict:
    now = timezone.now()
    data = {
        **_template_post(question),
        "title": "Loop for Ada",
        "candidate_account": "",
        "candidate_name": "",
        "candidate_email": "",
        "window_opens_at": _local(now - timedelta(minutes=5)),
        "window_closes_at": _local(now + timedelta(days=2)),
        "co_interviewers": "",
    }
    data.update(overrides)
    return data


def test_the_dashboard_is_for_interviewers(login, candidate, interviewer, make_interview):
    assert login(candidate).get("/interviews/").status_code == 403
    interview = make_interview()
    page = login(interviewer).get("/interviews/")
    assert page.status_code == 200
    html = page.content.decode()
    assert interview.title in html and "Ada" not in html  # for the existing account
    assert f"/interviews/{interview.pk}/live/" in html and f"/interviews/{interview.pk}/" in html


def test_create_a_template_and_see_it_listed(login, interviewer, question):
    publish(EXAMPLE)
    client = login(interviewer)
    form = client.get("/interviews/templates/new/")
    assert form.status_code == 200
    assert f'value="lab:{EXAMPLE}"' in form.content.decode()
    assert f'value="question:{question.slug}"' in form.content.decode()
    response = client.post("/interviews/templates/new/", _template_post(question))
    template = InterviewTemplate.objects.get(title="GPU infra loop")
    assert response.status_code == 302 and response.url == f"/interviews/templates/{template.pk}/"
    assert [(i.kind, i.time_box_minutes) for i in template.items.all()] == [("question", 10), ("lab", None)]
    listing = client.get("/interviews/templates/").content.decode()
    assert "GPU infra loop" in listing
    detail = client.get(response.url).content.decode()
    assert question.title_en in detail and Lab.objects.get(slug=EXAMPLE).current.spec["title"]["en"] in detail


def test_template_validation_errors_are_shown_next_to_the_field(login, interviewer, question):
    publish(EXAMPLE)
    client = login(interviewer)
    no_items = client.post("/interviews/templates/new/", _template_post(question, item_ref=["", ""], item_box=[]))
    assert no_items.status_code == 400
    assert "add at least one question or lab" in no_items.content.decode()
    bad_ref = client.post(
        "/interviews/templates/new/", _template_post(question, item_ref=["question:no-such-question"], item_box=[""])
    )
    assert "item 1: no question &#x27;no-such-question&#x27; in the bank" in bad_ref.content.decode()
    bad_box = client.post("/interviews/templates/new/", _template_post(question, item_box=["ten", "", ""]))
    assert "whole number of minutes" in bad_box.content.decode()
    no_title = client.post("/interviews/templates/new/", _template_post(question, title=""))
    assert no_title.status_code == 400 and "has-error" in no_title.content.decode()
    too_long = client.post("/interviews/templates/new/", _template_post(question, item_box=["9999", "", ""]))
    assert "a time box is 1–480 minutes" in too_long.content.decode()
    # What was typed comes back, so nothing is lost.
    assert f'value="question:{question.slug}" selected' in too_long.content.decode()
    assert not InterviewTemplate.objects.exists()


def test_only_the_owner_edits_a_template_others_copy_it(login, interviewer, co_interviewer, question):
    publish(EXAMPLE)
    login(interviewer).post("/interviews/templates/new/", _template_post(question))
    template = InterviewTemplate.objects.get()
    client = login(interviewer)
    edited = client.post(f"/interviews/templates/{template.pk}/edit/", _template_post(question, title="Renamed"))
    assert edited.status_code == 302
    template.refresh_from_db()
    assert template.title == "Renamed"

    other = login(co_interviewer)
    assert other.get(f"/interviews/templates/{template.pk}/edit/").status_code == 404
    assert other.post(f"/interviews/templates/{template.pk}/edit/", _template_post(question)).status_code == 404
    page = other.get(f"/interviews/templates/{template.pk}/").content.decode()
    assert "Renamed" in page and f"/interviews/templates/{template.pk}/edit/" not in page
    copied = other.post(f"/interviews/templates/{template.pk}/copy/")
    copy = InterviewTemplate.objects.get(owner=co_interviewer)
    assert copied.status_code == 302 and copied.url == f"/interviews/templates/{copy.pk}/edit/"
    assert copy.title == "Renamed (copy)" and copy.items.count() == 2
    assert other.get(copied.url).status_code == 200


def test_new_interview_from_a_template_is_prefilled(login, interviewer, question):
    publish(EXAMPLE)
    client = login(interviewer)
    client.post("/interviews/templates/new/", _template_post(question))
    template = InterviewTemplate.objects.get()
    html = client.get(f"/interviews/new/?template={template.pk}").content.decode()
    assert 'value="GPU infra loop"' in html
    assert f'value="question:{question.slug}" selected' in html and f'value="lab:{EXAMPLE}" selected' in html


def test_create_an_interview_for_an_existing_account(login, interviewer, co_interviewer, candidate, question):
    publish(EXAMPLE)
    client = login(interviewer)
    response = client.post(
        "/interviews/new/", _interview_post(question, candidate_account="cand@example.test", co_interviewers="intv2")
    )
    interview = Interview.objects.get()
    assert response.status_code == 302 and response.url == f"/interviews/{interview.pk}/"
    assert interview.candidate == candidate and list(interview.co_interviewers.all()) == [co_interviewer]
    detail = client.get(response.url).content.decode()
    lab_item = interview.items.get(kind="lab")
    assert f"seed {lab_item.seed}" in detail and "intv2" in detail and "created" in detail


def test_create_an_interview_by_email_and_refusals(login, interviewer, question):
    publish(EXAMPLE)
    client = login(interviewer)
    nobody = client.post("/interviews/new/", _interview_post(question))
    assert nobody.status_code == 400 and "give the candidate&#x27;s name and e-mail" in nobody.content.decode()
    unknown = client.post("/interviews/new/", _interview_post(question, candidate_account="ghost"))
    assert "No single account has the username or e-mail" in unknown.content.decode()
    now = timezone.now()
    window = {"window_opens_at": _local(now + timedelta(days=2)), "window_closes_at": _local(now + timedelta(days=1))}
    who = {"candidate_name": "Ada Lovelace", "candidate_email": "ada@example.test"}
    backwards = client.post("/interviews/new/", _interview_post(question, **who, **window))
    assert backwards.status_code == 400
    assert "the start window must close after it opens" in backwards.content.decode()
    not_panel = client.post("/interviews/new/", _interview_post(question, co_interviewers="cand-nobody"))
    assert "Not interviewers here: cand-nobody" in not_panel.content.decode()
    assert not Interview.objects.exists()
    ok = client.post(
        "/interviews/new/", _interview_post(question, candidate_name="Ada Lovelace", candidate_email="Ada@Example.test")
    )
    interview = Interview.objects.get()
    assert ok.status_code == 302 and interview.candidate is None and interview.candidate_email == "ada@example.test"
    # The window is read as UTC.
    assert interview.window_opens_at.utcoffset() == timedelta(0)


def test_invite_shows_the_link_once_and_emails_it(
    login, interviewer, make_interview, mailoutbox, django_capture_on_commit_callbacks
):
    interview = make_interview(by_email=True)
    client = login(interviewer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/interviews/{interview.pk}/invite/")
    html = response.content.decode()
    assert response.status_code == 200
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["ada@example.test"]
    link = next(line for line in mailoutbox[0].body.splitlines() if "/interviews/join/" in line)
    assert f'value="{link}"' in html
    invitation = Invitation.objects.get()
    assert invitation.token_hash == Invitation.hash(link.rstrip("/").rsplit("/", 1)[-1])
    # Shown once: the detail page afterwards has the invitation's state, not the link.
    again = client.get(f"/interviews/{interview.pk}/").content.decode()
    assert link not in again and "state-open" in again and "invitation sent to ada@example.test" in again


def test_revoke_an_invitation(login, interviewer, make_interview, django_capture_on_commit_callbacks):
    interview = make_interview(by_email=True)
    client = login(interviewer)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/interviews/{interview.pk}/invite/")
    invitation = Invitation.objects.get()
    response = client.post(f"/interviews/{interview.pk}/invitations/{invitation.pk}/revoke/", follow=True)
    invitation.refresh_from_db()
    assert invitation.state == "revoked"
    html = response.content.decode()
    assert "no longer signs anyone in" in html and "revoked" in html
    assert Event.objects.filter(interview=interview, kind=Event.Kind.INVITATION_REVOKED, actor=interviewer).exists()
    again = client.post(f"/interviews/{interview.pk}/invitations/{invitation.pk}/revoke/", follow=True)
    assert "already used, withdrawn or had expired" in again.content.decode()


def test_interview_pages_are_for_its_panel_and_admins(
    login, interviewer, co_interviewer, candidate, staff_admin, make_interview
):
    interview = make_interview(panel=[co_interviewer])
    stranger = make_user("intv3", Role.INTERVIEWER)
    for user, status in ((interviewer, 200), (co_interviewer, 200), (staff_admin, 200), (stranger, 404)):
        assert login(user).get(f"/interviews/{interview.pk}/").status_code == status, user
        assert login(user).get(f"/interviews/{interview.pk}/live/").status_code == status, user
    assert login(candidate).get(f"/interviews/{interview.pk}/").status_code in (403, 404)
    assert login(stranger).post(f"/interviews/{interview.pk}/invite/").status_code == 404

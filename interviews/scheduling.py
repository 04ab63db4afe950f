"""Making an interview and inviting its candidate: the single-use sign-in link."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _

from core.roles import Role, has_role, role_group
from interviews.audit import record
from interviews.errors import InterviewRefused
from interviews.loops import MAX_DURATION_MINUTES, ItemSpec, resolve_items
from interviews.models import Event, Interview, InterviewItem, InterviewTemplate, Invitation
from labs.services import new_seed

INVITATION_HOURS = 72


@dataclass(frozen=True)
class CandidateSpec:
    """An existing account, or a name and e-mail the invitation makes an account for on first use."""

    user: object | None = None
    name: str = ""
    email: str = ""


@transaction.atomic
def create_interview(owner, *, title: str, items: list[ItemSpec], candidate: CandidateSpec,
                     window_opens_at: datetime, window_closes_at: datetime, duration_minutes: int,
                     instructions: str = "", co_interviewers=(), template: InterviewTemplate | None = None,
                     ) -> Interview:  # fmt: skip
    title = (title or "").strip()
    if not title:
        raise InterviewRefused(_("give the interview a title"), "title")
    if not 5 <= duration_minutes <= MAX_DURATION_MINUTES:
        raise InterviewRefused(
            _("the duration is %(low)d–%(high)d minutes") % {"low": 5, "high": MAX_DURATION_MINUTES}, "duration_minutes"
        )
    if window_closes_at <= window_opens_at:
        raise InterviewRefused(_("the start window must close after it opens"), "window_closes_at")
    if window_closes_at <= timezone.now():
        raise InterviewRefused(_("the start window has already closed"), "window_closes_at")
    resolved = resolve_items(items)
    user = candidate.user
    if user is not None:
        name = candidate.name or user.get_full_name() or user.get_username()
        email = candidate.email or user.email
    else:
        name, email = candidate.name.strip(), candidate.email.strip().lower()
        if not name or not email:
            raise InterviewRefused(
                _("name the candidate and give their e-mail, or pick an existing account"), "candidate"
            )
    panel = list(co_interviewers)
    for person in panel:
        if not has_role(person, Role.INTERVIEWER):
            raise InterviewRefused(
                _("%(user)s is not an interviewer") % {"user": person.get_username()}, "co_interviewers"
            )
    if user is not None and (user.pk == owner.pk or any(p.pk == user.pk for p in panel)):
        raise InterviewRefused(_("the candidate cannot also be an interviewer of the interview"), "candidate")
    interview = Interview.objects.create(
        owner=owner, template=template, title=title, instructions=instructions or "", candidate=user,
        candidate_name=name, candidate_email=email, window_opens_at=window_opens_at,
        window_closes_at=window_closes_at, duration_minutes=duration_minutes,
    )  # fmt: skip
    interview.co_interviewers.set([p for p in panel if p.pk != owner.pk])
    InterviewItem.objects.bulk_create(
        InterviewItem(
            interview=interview, position=i, kind=fields["kind"], question=fields["question"], lab=fields["lab"],
            lab_version=fields["lab"].current if fields["lab"] else None,
            seed=new_seed() if fields["lab"] else None,
            time_box_seconds=fields["time_box_minutes"] * 60 if fields["time_box_minutes"] else None,
        )
        for i, fields in enumerate(resolved)
    )  # fmt: skip
    record(interview, Event.Kind.CREATED, owner, items=len(resolved))
    return interview


@transaction.atomic
def invite(interview: Interview, by, base_url: str, hours: int = INVITATION_HOURS) -> tuple[Invitation, str]:
    """A new link (earlier open links stop working), e-mailed to the candidate after commit."""
    if interview.status not in (Interview.Status.SCHEDULED, Interview.Status.IN_PROGRESS):
        raise InterviewRefused(_("this interview is over: there is nothing to invite to"))
    now = timezone.now()
    Invitation.objects.filter(interview=interview, used_at__isnull=True, revoked_at__isnull=True).update(revoked_at=now)
    token = secrets.token_urlsafe(32)
    expires = min(now + timedelta(hours=hours), interview.window_closes_at + timedelta(hours=1))
    invitation = Invitation.objects.create(
        interview=interview, token_hash=Invitation.hash(token), created_by=by, expires_at=expires
    )
    url = base_url.rstrip("/") + f"/interviews/join/{token}/"
    record(interview, Event.Kind.INVITED, by, email=interview.candidate_email, expires_at=expires.isoformat())
    message = (
        f"Hello {interview.candidate_name},\n\n"
        f"You are invited to the interview \u201c{interview.title}\u201d.\n"
        f"It can be started between {interview.window_opens_at:%Y-%m-%d %H:%M} and "
        f"{interview.window_closes_at:%Y-%m-%d %H:%M} UTC and lasts {interview.duration_minutes} minutes.\n\n"
        f"Open this link to sign in to the interview (it works once, until {expires:%Y-%m-%d %H:%M} UTC):\n{url}\n"
    )
    recipient = interview.candidate_email
    transaction.on_commit(
        lambda: send_mail(f"Interview: {interview.title}", message, settings.DEFAULT_FROM_EMAIL, [recipient])
    )
    return invitation, url


def revoke(invitation: Invitation, by) -> bool:
    done = (
        Invitation.objects.filter(pk=invitation.pk, used_at__isnull=True, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        == 1
    )
    if done:
        record(invitation.interview, Event.Kind.INVITATION_REVOKED, by)
    return done


def _new_candidate_account(name: str, email: str):
    User = get_user_model()
    base = slugify(email.split("@")[0])[:100] or "candidate"
    username = base
    while User.objects.filter(username=username).exists():
        username = f"{base}-{secrets.token_hex(3)}"
    first, _space, last = name.partition(" ")
    user = User(username=username, email=email, first_name=first[:150], last_name=last[:150])
    user.set_unusable_password()
    user.save()
    user.groups.add(role_group(Role.CANDIDATE))
    return user


def live_invitation(token: str) -> Invitation:
    """The invitation a link names, if it can still be used; spends nothing. InterviewRefused says why not."""
    invitation = Invitation.objects.select_related("interview").filter(token_hash=Invitation.hash(token)).first()
    if invitation is None or invitation.state != "open":
        raise InterviewRefused(_link_spent())
    if invitation.interview.status not in (Interview.Status.SCHEDULED, Interview.Status.IN_PROGRESS):
        raise InterviewRefused(_("this interview is over"))
    return invitation


def _link_spent() -> str:
    return _("this link has already been used, has expired or was withdrawn: ask your interviewer for a new one")


@transaction.atomic
def redeem(token: str) -> Interview:
    """Use a link: the interview it is for, with its candidate account made on first use."""
    invitation = Invitation.redeem(token)
    if invitation is None:
        raise InterviewRefused(_link_spent())
    interview = Interview.objects.select_for_update().get(pk=invitation.interview_id)
    if interview.status not in (Interview.Status.SCHEDULED, Interview.Status.IN_PROGRESS):
        raise InterviewRefused(_("this interview is over"))
    if interview.candidate_id is None:
        interview.candidate = _new_candidate_account(interview.candidate_name, interview.candidate_email)
        interview.save(update_fields=["candidate"])
    record(interview, Event.Kind.LINK_OPENED, interview.candidate)
    return interview

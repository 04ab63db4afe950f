"""Who may see which interview. Every page and endpoint goes through these, so the rules live once.

- interviewers see the interviews they own or were added to; admins (staff) see all;
- a candidate sees only their own, and only through the interview's candidate pages;
- anything else is answered 404, so a guessed id tells nothing about whether it exists.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404

from core.roles import Role, has_role
from interviews.models import Interview, InterviewTemplate

# The session key that binds a sign-in made by an invitation link to one interview.
SESSION_KEY = "faultline_interview_only"


def interviews_for_interviewer(user) -> QuerySet[Interview]:
    if not user.is_authenticated or not has_role(user, Role.INTERVIEWER):
        return Interview.objects.none()
    if user.is_staff:
        return Interview.objects.all()
    return Interview.objects.filter(Q(owner=user) | Q(co_interviewers=user)).distinct()


def interviewer_interview(user, pk: int) -> Interview:
    try:
        return interviews_for_interviewer(user).get(pk=pk)
    except Interview.DoesNotExist:
        raise Http404 from None


def is_owner(user, interview: Interview) -> bool:
    return user.is_staff or interview.owner_id == user.pk


def templates_for(user) -> QuerySet[InterviewTemplate]:
    """Interviewers share loops: any interviewer may read and copy a template; only its owner edits it."""
    if not user.is_authenticated or not has_role(user, Role.INTERVIEWER):
        return InterviewTemplate.objects.none()
    return InterviewTemplate.objects.all()


def editable_template(user, pk: int) -> InterviewTemplate:
    template = templates_for(user).filter(pk=pk).first()
    if template is None or not (user.is_staff or template.owner_id == user.pk):
        raise Http404
    return template


def candidate_interview(request, pk: int) -> Interview:
    """The interview a candidate may take: theirs, and when the session was opened by a link, only that one."""
    user = request.user
    if not user.is_authenticated:
        raise Http404
    bound = request.session.get(SESSION_KEY)
    if bound is not None and bound != pk:
        raise Http404
    try:
        return Interview.objects.get(pk=pk, candidate=user)
    except Interview.DoesNotExist:
        raise Http404 from None

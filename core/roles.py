"""The three platform roles and how pages and API endpoints enforce them.

Roles are Django groups (created by a data migration) so admins manage them in
the admin; staff users may use every role's pages.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy as _
from rest_framework.permissions import BasePermission


class Role(StrEnum):
    CANDIDATE = "candidate"
    INTERVIEWER = "interviewer"
    AUTHOR = "author"


def role_group(role: Role):
    """The group behind a role; recreated if an admin deleted it, so sign-up never 500s."""
    from django.contrib.auth.models import Group

    return Group.objects.get_or_create(name=role.value)[0]


def user_roles(user) -> set[Role]:
    if not user.is_authenticated:
        return set()
    if user.is_staff:
        return set(Role)
    cached = getattr(user, "_faultline_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))
        cached = {role for role in Role if role.value in names}
        user._faultline_roles = cached
    return cached


def has_role(user, *roles: Role) -> bool:
    return bool(user_roles(user) & set(roles))


def role_required(*roles: Role) -> Callable:
    """View decorator: anonymous users go to login, users without the role get 403."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, *roles):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        wrapper.required_roles = roles
        return wrapper

    return decorator


class HasRole(BasePermission):
    """DRF permission; set ``required_roles`` on the view."""

    message = _("Your account does not have the role this endpoint needs.")

    def has_permission(self, request, view) -> bool:
        roles = getattr(view, "required_roles", ())
        return bool(request.user and request.user.is_authenticated and has_role(request.user, *roles))

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from core.roles import Role, user_roles

# (url name, label, roles that see it; empty = every signed-in user)
NAV_ITEMS = (
    ("questions:index", _("Question bank"), ()),
    ("labs:index", _("Labs"), ()),
    ("interviews:index", _("Interviews"), (Role.INTERVIEWER,)),
    ("authoring:home", _("Authoring"), (Role.AUTHOR,)),
)


def navigation(request: HttpRequest) -> dict:
    base = {"signup_enabled": settings.SIGNUP_ENABLED}
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {**base, "nav_items": [], "user_role_names": []}
    roles = user_roles(user)
    items = [
        {"url": reverse(name), "label": label, "active": request.path.startswith(reverse(name))}
        for name, label, needed in NAV_ITEMS
        if not needed or roles & set(needed)
    ]
    return {**base, "nav_items": items, "user_role_names": sorted(r.value for r in roles)}

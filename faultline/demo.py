"""Demo accounts for local use: one per role plus a staff admin.

Passwords are random per installation and kept under var/ (never in the repo),
so a demo database copied to a server does not ship a known password.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from core.roles import Role, role_group

DEMO_ACCOUNTS = (
    ("candidate", Role.CANDIDATE, False),
    ("interviewer", Role.INTERVIEWER, False),
    ("author", Role.AUTHOR, False),
    ("admin", None, True),
)


def credentials_file() -> Path:
    return Path(settings.VAR_DIR) / "demo-credentials.json"


@transaction.atomic
def ensure_demo_users() -> dict[str, str]:
    """Create missing demo users; keep existing ones and their passwords. Returns username → password."""
    path = credentials_file()
    known: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    for username, role, staff in DEMO_ACCOUNTS:
        user = User.objects.filter(username=username).first()
        if user is None or username not in known:
            password = known.get(username) or secrets.token_urlsafe(9)
            if user is None:
                user = User(username=username, email=f"{username}@demo.faultline.invalid")
            user.set_password(password)
            user.is_staff = user.is_superuser = staff
            user.save()
            known[username] = password
        if role is not None:
            user.groups.add(role_group(role))
    path.write_text(json.dumps(known, indent=2))
    path.chmod(0o600)
    return {username: known[username] for username, _, _ in DEMO_ACCOUNTS}

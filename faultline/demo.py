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


DEMO_TEMPLATE_TITLE = "Distributed training on-call (demo loop)"
DEMO_TEMPLATE_ITEMS = (
    ("question", "nccl-timeout-single-node", 10),
    ("question", "multi-gpu-hang-triage", 10),
    ("lab", "nan-lr-unnormalised", 30),
)


def ensure_demo_template() -> str | None:
    """An interview loop the demo interviewer can start from; kept as it is once made."""
    from interviews.errors import InterviewRefused
    from interviews.loops import ItemSpec, save_template
    from interviews.models import InterviewTemplate

    owner = User.objects.filter(username="interviewer").first()
    if owner is None:
        return None
    if InterviewTemplate.objects.filter(owner=owner, title=DEMO_TEMPLATE_TITLE).exists():
        return DEMO_TEMPLATE_TITLE
    try:
        save_template(
            owner, title=DEMO_TEMPLATE_TITLE, duration_minutes=60,
            instructions="Two questions on multi-GPU hangs, then a live NaN lab. Think aloud; use the tools.",
            items=[ItemSpec(kind, ref, minutes) for kind, ref, minutes in DEMO_TEMPLATE_ITEMS],
        )  # fmt: skip
    except InterviewRefused:  # the bank or catalog changed: the demo goes on without the loop
        return None
    return DEMO_TEMPLATE_TITLE

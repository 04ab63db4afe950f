"""Which installation of the platform a container belongs to.

One Docker engine may serve several installations: a developer's running platform and the
test suite, or two checkouts. The reaper removes containers whose run it does not know, so
each installation must only ever look at its own; the label below scopes them by database.
"""

from __future__ import annotations

import hashlib

INSTANCE_LABEL = "faultline.instance"


def instance_id() -> str:
    from django.db import connection

    db = connection.settings_dict
    key = "|".join(str(db.get(part) or "") for part in ("ENGINE", "HOST", "PORT", "NAME"))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def instance_filter(*labels: str) -> dict:
    """A Docker ``filters`` argument: containers with all of ``labels`` that belong to this installation."""
    return {"label": [*labels, f"{INSTANCE_LABEL}={instance_id()}"]}

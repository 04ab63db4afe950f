"""A throwaway platform for a benchmark: settings from the environment, a migrated database, Django set up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def setup_django(var_dir: str, database: str, **env: str) -> None:
    """``env``: more settings (SANDBOX_BACKEND, CELERY_BROKER_URL, …) on top of production-like defaults."""
    os.environ.update(
        DATABASE_URL=database,
        FAULTLINE_VAR_DIR=var_dir,
        DEBUG="false",
        SECRET_KEY="bench-only-" + "x" * 40,
        ALLOWED_HOSTS="localhost",
        LOG_LEVEL="warning",
        DJANGO_SETTINGS_MODULE="faultline.settings",
        **env,
    )
    os.environ.pop("PYTEST_VERSION", None)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, check=True)
    import django

    django.setup()

"""requirements.txt alone must run the platform on every broker the settings accept.

The test environment also holds the dev tools and whatever they pull in, so a module the runtime
needs but requirements.txt does not bring (kombu's Redis transport imports `packaging`, which only
pytest installed) would import fine here and fail on a runtime-only install. Each import below runs
in a child interpreter that refuses every third-party module outside the distributions
requirements.txt installs, following their declared dependencies.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from faultline.transports import BROKER_TRANSPORT_MODULES

ROOT = Path(__file__).resolve().parents[2]

# Modules the platform loads only on some deployments: every broker transport, the PostgreSQL
# driver, the Redis client and the Docker SDK.
RUNTIME_IMPORTS = sorted(set(BROKER_TRANSPORT_MODULES.values())) + [
    "django.db.backends.postgresql.base",
    "redis",
    "docker",
    "celery.worker",
]

BLOCKER = r"""
import importlib.abc, json, sys
allowed_dists = set(json.loads(sys.argv[1]))
owners = json.loads(sys.argv[2])
class RuntimeOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        dists = owners.get(top)
        if dists and not allowed_dists.intersection(dists):
            raise ModuleNotFoundError(f"No module named {top!r} in a runtime-only install", name=top)
        return None
sys.meta_path.insert(0, RuntimeOnly())
import importlib
importlib.import_module(sys.argv[3])
"""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_distributions(requirements: Path) -> set[str]:
    """requirements.txt's distributions and everything they declare, transitively (no extras)."""
    pending = []
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            pending.append(Requirement(line).name)
    seen: set[str] = set()
    while pending:
        name = _canonical(pending.pop())
        if name in seen:
            continue
        seen.add(name)
        for spec in metadata.requires(name) or []:
            requirement = Requirement(spec)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return seen


def import_runtime_only(module: str, allowed: set[str]) -> subprocess.CompletedProcess:
    owners = {top: [_canonical(d) for d in dists] for top, dists in metadata.packages_distributions().items()}
    return subprocess.run(
        [sys.executable, "-c", BLOCKER, json.dumps(sorted(allowed)), json.dumps(owners), module],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip


@pytest.fixture(scope="module")
def allowed() -> set[str]:
    return runtime_distributions(ROOT / "requirements.txt")


@pytest.mark.parametrize("module", RUNTIME_IMPORTS)
def test_runtime_install_imports(module: str, allowed: set[str]) -> None:
    result = import_runtime_only(module, allowed)
    assert result.returncode == 0, f"{module} needs more than requirements.txt installs:\n{result.stderr[-2000:]}"


def test_the_check_refuses_dev_only_modules(allowed: set[str]) -> None:
    # pytest is installed here but not by requirements.txt: the child must refuse it, or the
    # imports above prove nothing.
    assert "pytest" not in allowed
    result = import_runtime_only("pytest", allowed)
    assert result.returncode != 0
    assert "runtime-only install" in result.stderr


def test_the_check_would_have_caught_packaging() -> None:
    without = runtime_distributions(ROOT / "requirements.txt") - {"packaging"}
    result = import_runtime_only("kombu.transport.redis", without)
    assert result.returncode != 0
    assert "packaging" in result.stderr

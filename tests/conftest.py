"""Shared fixtures. Tests talk to loopback only: any other connect() fails loudly."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from core.roles import Role, role_group

PASSWORD = "correct-horse-battery-staple-42"
REPO = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check_address(sock: socket.socket, address) -> None:
    if sock.family == socket.AF_UNIX:
        return
    host = address[0]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if host == "localhost":
            return
        raise OSError(f"test tried to reach {host!r}: tests may only use loopback") from None
    if not ip.is_loopback:
        raise OSError(f"test tried to reach {host}: tests may only use loopback")


def _guarded_connect(self, address):
    _check_address(self, address)
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    _check_address(self, address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True, scope="session")
def _loopback_only():
    socket.socket.connect = _guarded_connect
    socket.socket.connect_ex = _guarded_connect_ex
    yield
    socket.socket.connect = _real_connect
    socket.socket.connect_ex = _real_connect_ex


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """Load the real question bank and lab catalog once into the test database; tests roll back around it."""
    from django.core.management import call_command

    with django_db_blocker.unblock():
        call_command("loadbank", verbosity=0)
        call_command("loadlabs", verbosity=0)


@pytest.fixture(autouse=True)
def _english():
    """Messages are asserted in English, whatever language an earlier request left active: the locale
    middleware activates a request's language in the test's own thread and nothing deactivates it."""
    from django.utils import translation

    with translation.override("en"):
        yield


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Cached values (topic counts) must not leak between tests that roll back."""
    from django.core.cache import cache

    cache.clear()


def make_user(username: str, *roles: Role, staff: bool = False) -> User:
    user = User.objects.create_user(username, f"{username}@example.test", PASSWORD, is_staff=staff)
    for role in roles:
        user.groups.add(role_group(role))
    return user


@pytest.fixture
def candidate(db) -> User:
    return make_user("cand", Role.CANDIDATE)


@pytest.fixture
def interviewer(db) -> User:
    return make_user("intv", Role.INTERVIEWER)


@pytest.fixture
def author(db) -> User:
    return make_user("auth", Role.AUTHOR)


@pytest.fixture
def staff_admin(db) -> User:
    return make_user("boss", staff=True)


@pytest.fixture
def login(client):
    def _login(user: User):
        client.force_login(user)
        return client

    return _login


def _docker_unavailable() -> str | None:
    from sandbox.selection import docker_ping

    ok, detail = docker_ping()
    return None if ok else detail


def pytest_collection_modifyitems(config, items):
    """Real-component tests skip with the reason on a bare machine; in CI
    (FAULTLINE_REQUIRE_SERVICES=1) a missing component is a failure instead."""
    import os
    import shutil

    if os.environ.get("FAULTLINE_REQUIRE_SERVICES") == "1":
        return  # CI: let them run and fail loudly if a component is missing
    reasons = {}
    if any("docker" in item.keywords for item in items):
        reasons["docker"] = _docker_unavailable()
    if any("browser" in item.keywords for item in items):
        reasons["browser"] = (
            None if shutil.which("chromium") else "Debian's chromium is not installed (make test installs it)"
        )
    for item in items:
        for marker, reason in reasons.items():
            if reason and marker in item.keywords:
                item.add_marker(pytest.mark.skip(reason=f"{marker}: {reason}"))


# --- browser tests: one Playwright for the whole session, shared by every folder's browser tests ---------


@pytest.fixture(scope="session")
def browser():
    # Playwright's sync API runs an event loop in this thread; the ORM calls
    # that fixtures make around it are still plain synchronous code.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def screenshot_dir(tmp_path) -> Path:
    """docs/screenshots when FAULTLINE_UPDATE_SCREENSHOTS=1, else a temporary folder."""
    if os.environ.get("FAULTLINE_UPDATE_SCREENSHOTS") == "1":
        target = REPO / "docs" / "screenshots"
        target.mkdir(parents=True, exist_ok=True)
        return target
    return tmp_path

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
SKIP_DIRS = {".venv", "node_modules", "var", ".git", "tests", "docs", ".pytest_cache", ".ruff_cache", "__pycache__"}


def test_language_switch_persists(client, db):
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert response.status_code == 302
    html = client.get("/").content.decode()
    assert '<html lang="zh-hans">' in html
    assert "排查真实的 AI 基础设施问题" in html
    assert "题库" in html
    client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "Debug real AI infrastructure" in client.get("/").content.decode()


def test_browser_language_is_honoured(client, db):
    html = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "创建候选人账号" in html


def test_committed_catalog_has_no_untranslated_or_fuzzy_entries():
    catalog = polib.pofile(str(CATALOG))
    assert catalog.percent_translated() == 100, [e.msgid for e in catalog.untranslated_entries()]
    assert not catalog.fuzzy_entries()


@pytest.mark.skipif(shutil.which("xgettext") is None, reason="makemessages needs GNU gettext (apt-get install gettext)")
def test_catalog_covers_every_translatable_string(tmp_path):
    """Re-extract strings from a copy of the source: anything new must already be translated."""
    copy = tmp_path / "src"
    shutil.copytree(REPO, copy, ignore=lambda d, names: [n for n in names if n in SKIP_DIRS])
    result = subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "--no-obsolete"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "FAULTLINE_VAR_DIR": str(tmp_path / "var"), "PYTHONPATH": str(copy)},
    )
    assert result.returncode == 0, result.stderr
    fresh = polib.pofile(str(copy / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"))
    missing = [e.msgid for e in fresh if not e.translated() or e.fuzzy]
    assert not missing, f"strings without a Chinese translation: {missing}"

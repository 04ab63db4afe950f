"""The editor bundle that `manage.py vendorstatic` builds from our entry module with esbuild (a
devDependency: without `npm ci` these fail, saying so)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.management.base import CommandError

from faultline.management.commands.vendorstatic import BUNDLES, build_bundle


def test_the_editor_bundle_is_one_script_that_sets_the_page_api(tmp_path):
    target = tmp_path / "faultline-editor.js"
    build_bundle(settings.BASE_DIR, settings.BASE_DIR / "static" / BUNDLES["codemirror/faultline-editor.js"], target)
    text = target.read_text()
    assert "window.FaultlineEditor" in text
    # One classic script: no module syntax left for the browser to resolve.
    assert not text.lstrip().startswith("import") and "\nimport " not in text
    # A rebuild with nothing changed leaves the file alone (collectstatic and caches see the same bytes).
    before = target.stat().st_mtime_ns
    build_bundle(settings.BASE_DIR, settings.BASE_DIR / "static" / BUNDLES["codemirror/faultline-editor.js"], target)
    assert target.stat().st_mtime_ns == before


def test_a_broken_entry_module_stops_setup_with_esbuilds_message(tmp_path):
    entry = tmp_path / "entry.js"
    entry.write_text('import { nothing } from "@codemirror/no-such-package";\n')
    with pytest.raises(CommandError, match="no-such-package"):
        build_bundle(settings.BASE_DIR, entry, tmp_path / "out.js")
    assert not (tmp_path / "out.js").exists()

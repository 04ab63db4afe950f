"""Copy the front-end libraries installed by npm into static/vendor/, and bundle the ones that
ship only as ES modules.

They come from the npm registry through package.json and package-lock.json;
nothing third-party is committed, so this runs as part of setup (and of `make test`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

# destination folder under static/vendor -> files from node_modules/<package>/
VENDOR_FILES: dict[str, tuple[str, list[str]]] = {
    "htmx": ("htmx.org", ["dist/htmx.min.js", "LICENSE"]),
    # Source maps travel with the files that reference them: the manifest storage
    # used when DEBUG is off refuses to collect a file whose map is missing.
    "chartjs": ("chart.js", ["dist/chart.umd.min.js", "dist/chart.umd.min.js.map", "LICENSE.md"]),
    "prism": (
        "prismjs",
        [
            "prism.js",
            "components/prism-python.min.js",
            "components/prism-diff.min.js",
            "themes/prism.min.css",
            "LICENSE",
        ],
    ),
    "codemirror": ("codemirror", ["LICENSE"]),
    "swagger-ui": (
        "swagger-ui-dist",
        [
            "swagger-ui.css",
            "swagger-ui.css.map",
            "swagger-ui-bundle.js",
            "swagger-ui-bundle.js.map",
            "swagger-ui-standalone-preset.js",
            "swagger-ui-standalone-preset.js.map",
            "LICENSE",
        ],
    ),
}

# bundle under static/vendor -> our entry module under static/. CodeMirror 6 is split over many ES
# module packages; esbuild (a devDependency) joins them into one script our pages load as it is.
BUNDLES: dict[str, str] = {
    "codemirror/faultline-editor.js": "js/src/editor-entry.js",
}


def build_bundle(base_dir: Path, entry: Path, destination: Path) -> None:
    """Bundle ``entry`` into ``destination``, written only when its bytes change, so collectstatic
    and browser caches see the same file across re-runs."""
    # Run as its own program: after its install script it is the native binary, before it a node
    # script with a shebang, and either way it executes.
    esbuild = base_dir / "node_modules" / ".bin" / "esbuild"
    if not esbuild.is_file():
        raise CommandError("esbuild is missing from node_modules (run `npm ci`)")
    command = [str(esbuild), str(entry), "--bundle", "--format=iife", "--minify", "--target=es2020",
               "--log-level=error"]  # fmt: skip
    result = subprocess.run(command, cwd=base_dir, capture_output=True, check=False)
    if result.returncode != 0:
        raise CommandError(f"esbuild could not bundle {entry}:\n{result.stderr.decode(errors='replace')}")
    destination.parent.mkdir(parents=True, exist_ok=True)
    if not destination.exists() or destination.read_bytes() != result.stdout:
        destination.write_bytes(result.stdout)


class Command(BaseCommand):
    help = "Copy npm-installed front-end libraries into static/vendor/."

    def handle(self, *args, **options) -> None:
        node_modules = Path(settings.BASE_DIR) / "node_modules"
        target_root = Path(settings.BASE_DIR) / "static" / "vendor"
        missing = []
        for folder, (package, files) in VENDOR_FILES.items():
            for name in files:
                source = node_modules / package / name
                if not source.is_file():
                    missing.append(f"{package}/{name}")
                    continue
                destination = target_root / folder / Path(name).name
                destination.parent.mkdir(parents=True, exist_ok=True)
                if not destination.exists() or destination.read_bytes() != source.read_bytes():
                    shutil.copyfile(source, destination)
        if missing:
            raise CommandError("front-end packages missing from node_modules (run `npm ci`): " + ", ".join(missing))
        static_root = Path(settings.BASE_DIR) / "static"
        for bundle, entry in BUNDLES.items():
            build_bundle(Path(settings.BASE_DIR), static_root / entry, target_root / bundle)
        self.stdout.write(
            f"vendored {len(VENDOR_FILES)} front-end packages and built {len(BUNDLES)} bundle(s) into {target_root}"
        )

"""Copy the front-end libraries installed by npm into static/vendor/.

They come from the npm registry through package.json and package-lock.json;
nothing third-party is committed, so this runs as part of setup.
"""

from __future__ import annotations

import shutil
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
        self.stdout.write(f"vendored {len(VENDOR_FILES)} front-end packages into {target_root}")

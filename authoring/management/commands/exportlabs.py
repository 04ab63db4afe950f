"""Write the published catalog back to lab folders (``labs/catalog/<slug>/`` by default), so labs made or
changed in the browser can be committed to git; ``loadlabs`` reads the folders back unchanged."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand

from authoring.audit import record
from authoring.lab_drafts import files_of_version
from authoring.models import AuthoringEvent
from labs.services import published_labs
from labs.spec import CATALOG_DIR


def export_catalog(out: Path) -> list[str]:
    """Every published lab's current version as ``out/<slug>/``; returns the slugs written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for lab in published_labs().order_by("slug"):
        files = files_of_version(lab.current)
        # Written beside the target first, then swapped in: a failure never leaves half a folder.
        staging = Path(tempfile.mkdtemp(prefix=f".{lab.slug}-", dir=out))
        for path, text in files.items():
            target = staging / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        final = out / lab.slug
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
        record(AuthoringEvent.Kind.EXPORTED, AuthoringEvent.Subject.LAB, lab.slug, None,
               version=lab.current.number, to=str(final))  # fmt: skip
        written.append(lab.slug)
    return written


class Command(BaseCommand):
    help = "Write every published lab's current version to <out>/<slug>/ (default: labs/catalog)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--out", default=str(CATALOG_DIR), help="folder to write the lab folders into")

    def handle(self, *args, out: str, **options) -> None:
        written = export_catalog(Path(out))
        self.stdout.write(f"wrote {len(written)} lab(s) to {out}: {', '.join(written) or 'none'}")

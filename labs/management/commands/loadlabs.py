from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from labs.loader import load_labs
from labs.spec import LabCatalogError


class Command(BaseCommand):
    help = "Import labs/catalog/ (idempotent; nothing is written if any lab is bad). New versions need validatelab."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--catalog-dir", type=Path, help="folder of <slug>/lab.yaml (default: LAB_CATALOG_DIR)")

    def handle(self, *args, catalog_dir: Path | None, **options) -> None:
        catalog_dir = catalog_dir or Path(settings.LAB_CATALOG_DIR)
        if not catalog_dir.is_dir():
            raise CommandError(f"lab catalog {catalog_dir} is not a folder (LAB_CATALOG_DIR or --catalog-dir)")
        try:
            report = load_labs(catalog_dir.resolve())
        except LabCatalogError as exc:
            raise CommandError(
                f"labs not loaded ({len(exc.errors)} problem(s); nothing was written):\n  "
                + "\n  ".join(str(e) for e in exc.errors)
            ) from exc
        self.stdout.write(
            f"Labs: {len(report.created)} new, {len(report.new_versions)} new versions, "
            f"{len(report.unchanged)} unchanged, {len(report.retired)} retired"
        )
        for slug in report.created + report.new_versions:
            self.stdout.write(f"  {slug}: imported; publish it with `manage.py validatelab {slug}`")
        for slug in report.retired:
            self.stdout.write(self.style.WARNING(f"  retired {slug}: its folder is gone (attempts kept)"))

"""Compile locale/*/LC_MESSAGES/*.po into .mo files with polib.

Django's compilemessages needs GNU gettext on the machine; this keeps setup to
Python alone. Compiled .mo files are build output and are not committed.
"""

from __future__ import annotations

from pathlib import Path

import polib
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Compile .po translation catalogs into .mo files (no gettext needed)."

    def handle(self, *args, **options) -> None:
        count = 0
        for locale_dir in settings.LOCALE_PATHS:
            for po_path in Path(locale_dir).glob("*/LC_MESSAGES/*.po"):
                try:
                    catalog = polib.pofile(str(po_path))
                except (OSError, ValueError) as exc:
                    raise CommandError(f"{po_path}: cannot parse translation catalog: {exc}") from exc
                mo_path = po_path.with_suffix(".mo")
                if mo_path.exists() and mo_path.stat().st_mtime >= po_path.stat().st_mtime:
                    continue
                catalog.save_as_mofile(str(mo_path))
                count += 1
        self.stdout.write(f"compiled {count} translation catalog(s)")

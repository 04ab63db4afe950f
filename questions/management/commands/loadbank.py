from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from questions.bankfile import BANK_DIR
from questions.loader import BankLoadError, load_bank


class Command(BaseCommand):
    help = "Import questions/bank/ into the database (idempotent; nothing is written if any file is bad)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--bank-dir", type=Path, default=BANK_DIR, help="folder holding topics.yaml and <topic>/*.md"
        )

    def handle(self, *args, bank_dir: Path, **options) -> None:
        try:
            report = load_bank(bank_dir.resolve())
        except BankLoadError as exc:
            raise CommandError(
                f"question bank not loaded ({len(exc.errors)} problem(s); nothing was written):\n  "
                + "\n  ".join(exc.errors)
            ) from exc
        self.stdout.write(f"Question bank: {report.summary()}")
        for slug in report.retired:
            self.stdout.write(
                self.style.WARNING(
                    f"  retired {slug}: its file is gone (history kept; restore the file to bring it back)"
                )
            )
        for slug in report.kept:
            self.stdout.write(f"  kept {slug}: edited in the browser, and its bank file has not changed since")

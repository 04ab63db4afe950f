"""Merge the rows of validation processes that ran side by side into the README's validation table.

    python manage.py validationsummary var/validate-1/rows.jsonl var/validate-2/rows.jsonl

Each file is what ``validatelab --rows-out FILE`` wrote. Exit status 1 if any row is a violation, so the
table that is printed is the one the build stood on.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from labs.validation import ValidationRow
from labs.validation_report import summary_markdown

ROW_FIELDS = {f.name for f in fields(ValidationRow)}


class Command(BaseCommand):
    help = "Print one validation table from the rows that several validatelab processes wrote."

    def add_arguments(self, parser) -> None:
        parser.add_argument("files", nargs="+", help="files written by validatelab --rows-out")

    def handle(self, *args, files: list[str], **options) -> None:
        rows: list[ValidationRow] = []
        seeds = 0
        for name in files:
            path = Path(name)
            if not path.is_file():
                raise CommandError(f"{name}: no such file (did validatelab run with --rows-out {name}?)")
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                try:
                    data = json.loads(line)
                    seeds = max(seeds, int(data.pop("seeds")))
                    rows.append(ValidationRow(**{k: v for k, v in data.items() if k in ROW_FIELDS}))
                except (ValueError, KeyError, TypeError) as exc:
                    raise CommandError(f"{name}:{number}: not a validation row ({exc})") from None
        if not rows:
            raise CommandError("no validation rows in " + ", ".join(files))
        self.stdout.write(summary_markdown(rows, seeds))
        if any(not row.ok for row in rows):
            raise CommandError("the table above has violations")

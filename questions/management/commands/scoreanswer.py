"""Score an answer read from stdin against a bank question's rubric, exactly as the practice page does.

    echo "The learning rate is too high ..." | python manage.py scoreanswer nan-loss-checklist --lang en

Prints one JSON object: ``{"question", "score", "points": [{"key", "label", "state", "fraction",
"weight", "found", "listed", "missing", "evidence", "misconception"}]}``. Reads the bank's files, so it
needs no database. Exit status 2 with one line on stderr for an unknown question or an empty answer.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from questions.concepts import answer_coverage, point_report
from questions.loader import BankLoadError, parse_bank


class Command(BaseCommand):
    help = "Score an answer (stdin) against a bank question's rubric; print one JSON object."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug", help="the question's slug, e.g. nan-loss-checklist")
        parser.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the point labels")

    def handle(self, *args, slug: str, lang: str, **options) -> None:
        try:
            _topics, specs = parse_bank()
        except BankLoadError as exc:
            raise CommandError(f"the question bank does not load: {exc}", returncode=2) from None
        spec = next((s for s in specs if s.slug == slug), None)
        if spec is None:
            raise CommandError(f"no question {slug!r} in the bank", returncode=2)
        text = sys.stdin.read()
        if not text.strip():
            raise CommandError("no answer on stdin", returncode=2)
        points, percent = answer_coverage(text, [point.scoring() for point in spec.rubric])
        labels = {p.key: p.text[lang] for p in spec.rubric}
        reports = [point_report(p.as_dict(), labels[p.key]) for p in points]
        self.stdout.write(json.dumps({"question": slug, "score": percent, "points": reports}, ensure_ascii=False))

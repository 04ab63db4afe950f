"""Score every calibration answer against its question's rubric and print the table.

    python manage.py calibration                       # every question: references + calibration files
    python manage.py calibration nan-loss-checklist    # only these questions
    python manage.py calibration --json                # one JSON object instead of the table

A row is one answer (the question's reference answers, then each entry of
``<slug>.calibration.yaml``) with its score and the band its kind must meet (docs/question-format.md).
The summary says how many questions have a calibration file at all, since a question without one is
checked on its reference answers only. Exit status 1 if any row is out of band or any calibration file
is invalid, 2 for an unknown slug or a bank that does not load. Reads files only; needs no database.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from questions.bankfile import BankFileError
from questions.calibration import (
    CalibrationRow,
    calibration_path,
    iter_calibration_files,
    parse_calibration,
    score_question,
    slug_of,
)
from questions.loader import BankLoadError, parse_bank


class Command(BaseCommand):
    help = "Score the calibration answers of bank questions and check each against its band."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slugs", nargs="*", help="question slugs (default: every question)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, slugs: list[str], json: bool, **options) -> None:
        try:
            _topics, spec_list = parse_bank()
        except BankLoadError as exc:
            raise CommandError(f"the question bank does not load: {exc}", returncode=2) from None
        specs = {s.slug: s for s in spec_list}
        unknown = [s for s in slugs if s not in specs]
        if unknown:
            raise CommandError(f"no question {', '.join(map(repr, unknown))} in the bank", returncode=2)
        files = iter_calibration_files()
        chosen = [specs[s] for s in slugs] if slugs else sorted(spec_list, key=lambda s: (s.topic, s.slug))
        errors: list[str] = []
        rows: list[CalibrationRow] = []
        if not slugs:
            # A file named after no question, or lying in another folder than its question, is only found
            # by looking at every file.
            for path in files:
                if slug_of(path) not in specs or path != calibration_path(specs[slug_of(path)]):
                    try:
                        parse_calibration(path, specs)
                    except BankFileError as exc:
                        errors.append(str(exc))
        for spec in chosen:
            path = calibration_path(spec)
            calibration = None
            if path.exists():
                try:
                    calibration = parse_calibration(path, specs)
                except BankFileError as exc:
                    errors.append(str(exc))
            rows += score_question(spec, calibration)
        with_files = sum(calibration_path(spec).exists() for spec in specs.values())
        out_of_band = [r for r in rows if not r.ok]
        if json:
            self.stdout.write(_json_dumps(rows, errors, with_files, len(specs), len(out_of_band)))
        else:
            self.stdout.write(_table(rows))
            for error in errors:
                self.stdout.write(f"ERROR {error}")
            self.stdout.write(
                f"questions with calibration files: {with_files} of {len(specs)}; rows: {len(rows)}; "
                f"rows out of band: {len(out_of_band)}; invalid files: {len(errors)}"
            )
        if out_of_band or errors:
            raise SystemExit(1)


def _json_dumps(rows: list[CalibrationRow], errors: list[str], with_files: int, total: int, bad: int) -> str:
    summary = {"questions": total, "with_calibration_file": with_files, "rows": len(rows), "out_of_band": bad,
               "invalid_files": len(errors)}  # fmt: skip
    return json.dumps({"rows": [r.as_dict() for r in rows], "errors": errors, "summary": summary}, ensure_ascii=False)


def _table(rows: list[CalibrationRow]) -> str:
    header = ("question", "#", "kind", "lang", "point", "score", "band", "ok", "contradicted")
    lines = [header]
    for r in rows:
        lines.append((
            r.slug, "ref" if r.index is None else str(r.index), r.kind, r.lang, r.point or "", str(r.score), r.band,
            "ok" if r.ok else "OUT", ",".join(r.contradicted),
        ))  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)

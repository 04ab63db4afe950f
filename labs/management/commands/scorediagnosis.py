"""Score a lab diagnosis read from stdin, exactly as the workspace does.

    echo "Rank 1 waits in backward ..." | python manage.py scorediagnosis hang-ddp-uneven-inputs --seed 3 \
        --cause uneven-inputs

Prints one JSON object: ``{"lab", "seed", "cause", "score", "root_cause_correct", "evidence_percent",
"variant_points", "points": [...]}`` with the points in the shape ``scoreanswer`` prints. The score is the
diagnosis score of a lab attempt: 50 for the right root cause plus 50 × the evidence's rubric coverage.
Rubric points listed in ``variant_points`` are matched against the values of the variant that ``--seed``
picks (the bad step, the hooked layer, ...), so the same text can score differently for another seed.
Reads the lab catalog's files, so it needs no database. Exit status 2 with one line on stderr for an
unknown lab or root cause, or an empty diagnosis.

    python manage.py scorediagnosis --calibration [<lab>]

prints the calibration table instead: every diagnosis of ``labs/calibration/<lab>.yaml`` (all labs when
none is named) with its kind, language, seed, score, band and whether it lands in the band; exit status 1
when one does not.
"""

from __future__ import annotations

import json
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from labs.diagnosis import grade_diagnosis
from labs.diagnosis_calibration import CalibrationError, calibration_path, load_calibration, score_calibration
from labs.render import choose_params
from labs.spec import LabSpecError, load_lab
from questions.concepts import point_report


class Command(BaseCommand):
    help = "Score a lab diagnosis (evidence on stdin) for a root cause; print one JSON object."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug", nargs="?", help="the lab's slug, e.g. hang-ddp-uneven-inputs")
        parser.add_argument("--seed", type=int, help="the attempt's variant seed")
        parser.add_argument("--cause", help="the root-cause option the candidate chose (its key)")
        parser.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the point labels")
        parser.add_argument(
            "--calibration", action="store_true", help="print the calibration table of the lab (or of every lab)"
        )

    def handle(self, *args, slug: str | None, seed: int | None, cause: str | None, lang: str, **options) -> None:
        if options["calibration"]:
            self.calibration(slug)
            return
        if not slug or seed is None or cause is None:
            raise CommandError("give a lab slug, --seed and --cause (or --calibration)", returncode=2)
        if seed < 0:
            raise CommandError(f"--seed must be 0 or more, got {seed}", returncode=2)
        spec = self.spec(slug)
        diagnosis = spec["diagnosis"]
        options_keys = [option["key"] for option in diagnosis["options"]]
        if cause not in options_keys:
            raise CommandError(f"--cause {cause!r} is not one of {', '.join(options_keys)}", returncode=2)
        text = sys.stdin.read()
        if not text.strip():
            raise CommandError("no diagnosis on stdin", returncode=2)
        values = choose_params(spec["slug"], spec["params"], seed)
        score, detail = grade_diagnosis(diagnosis, cause, text, values, spec["params"])
        report = {
            "lab": slug, "seed": seed, "cause": cause, "score": score,
            "root_cause_correct": detail["root_cause_correct"], "evidence_percent": detail["evidence_percent"],
            "variant_points": detail["variant_points"],
            "points": [point_report(point, point["label"][lang]) for point in detail["points"]],
        }  # fmt: skip
        self.stdout.write(json.dumps(report, ensure_ascii=False))

    def spec(self, slug: str) -> dict:
        folder = settings.LAB_CATALOG_DIR / slug
        if not (folder / "lab.yaml").is_file():
            raise CommandError(f"no lab {slug!r} in {settings.LAB_CATALOG_DIR}", returncode=2)
        try:
            return load_lab(folder).as_json()
        except LabSpecError as exc:
            raise CommandError(f"the lab does not load: {exc}", returncode=2) from None

    def calibration(self, slug: str | None) -> None:
        if slug:
            slugs = [slug]
        else:
            slugs = sorted(p.name for p in settings.LAB_CATALOG_DIR.iterdir() if (p / "lab.yaml").is_file())
        rows = []
        for name in slugs:
            spec = self.spec(name)
            path = calibration_path(name)
            if not path.is_file():
                raise CommandError(f"{name}: no calibration file {path}", returncode=2)
            try:
                rows += score_calibration(spec, load_calibration(path, spec))
            except CalibrationError as exc:
                raise CommandError(str(exc), returncode=2) from None
        width = max(len(row["lab"]) for row in rows)
        self.stdout.write(f"{'lab':<{width}}  {'kind':<14}  lang  seed  score  {'band':<15}  ok")
        for row in rows:
            self.stdout.write(
                f"{row['lab']:<{width}}  {row['kind']:<14}  {row['lang']:<4}  {row['seed']:>4}  {row['score']:>5}  "
                f"{row['band']:<15}  {'yes' if row['ok'] else 'NO'}"
            )
        if not all(row["ok"] for row in rows):
            raise CommandError("some calibration diagnoses score outside their band", returncode=1)

"""Score a lab diagnosis read from stdin, exactly as the workspace does.

    echo "Rank 1 waits in backward ..." | python manage.py scorediagnosis hang-ddp-uneven-inputs --seed 3 \
        --cause uneven-inputs

Prints one JSON object: ``{"lab", "seed", "cause", "score", "root_cause_correct", "evidence_percent",
"points": [...]}`` with the points in the shape ``scoreanswer`` prints. The score is the diagnosis score
of a lab attempt: 50 for the right root cause plus 50 × the evidence's rubric coverage. Reads the lab
catalog's files, so it needs no database. Today's rubrics are the same for every variant; the seed is
checked and echoed so scripts keep working when evidence is matched to the variant. Exit status 2 with
one line on stderr for an unknown lab or root cause, or an empty diagnosis.
"""

from __future__ import annotations

import json
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from labs.diagnosis import grade_diagnosis
from labs.spec import LabSpecError, load_lab
from questions.concepts import point_report


class Command(BaseCommand):
    help = "Score a lab diagnosis (evidence on stdin) for a root cause; print one JSON object."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug", help="the lab's slug, e.g. hang-ddp-uneven-inputs")
        parser.add_argument("--seed", type=int, required=True, help="the attempt's variant seed")
        parser.add_argument("--cause", required=True, help="the root-cause option the candidate chose (its key)")
        parser.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the point labels")

    def handle(self, *args, slug: str, seed: int, cause: str, lang: str, **options) -> None:
        if seed < 0:
            raise CommandError(f"--seed must be 0 or more, got {seed}", returncode=2)
        folder = settings.LAB_CATALOG_DIR / slug
        if not (folder / "lab.yaml").is_file():
            raise CommandError(f"no lab {slug!r} in {settings.LAB_CATALOG_DIR}", returncode=2)
        try:
            diagnosis = load_lab(folder).diagnosis
        except LabSpecError as exc:
            raise CommandError(f"the lab does not load: {exc}", returncode=2) from None
        options_keys = [option["key"] for option in diagnosis["options"]]
        if cause not in options_keys:
            raise CommandError(f"--cause {cause!r} is not one of {', '.join(options_keys)}", returncode=2)
        text = sys.stdin.read()
        if not text.strip():
            raise CommandError("no diagnosis on stdin", returncode=2)
        score, detail = grade_diagnosis(diagnosis, cause, text)
        report = {
            "lab": slug, "seed": seed, "cause": cause, "score": score,
            "root_cause_correct": detail["root_cause_correct"], "evidence_percent": detail["evidence_percent"],
            "points": [point_report(point, point["label"][lang]) for point in detail["points"]],
        }  # fmt: skip
        self.stdout.write(json.dumps(report, ensure_ascii=False))

"""Correctness and data-loading labs: a valid fix other than the reference passes, graded as a submission.

Every cover-up scoring 0 % on three seeds is what `make test` proves with validatelab for the whole
catalog; here each lab gets a different correct fix, so the checks do not merely recognise the
reference. Real Docker, through gradefix (the faulty program runs first on the seed, then the fix).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from labs.models import LabVersion
from labs.render import choose_params, render_files

pytestmark = [pytest.mark.django_db, pytest.mark.docker]

LABS = [
    "correctness-grad-accumulation",
    "correctness-missing-eval",
    "correctness-resume-optimizer-state",
    "correctness-weight-conversion-transpose",
    "perf-dataloader-bottleneck",
]
FIXTURES = Path(__file__).parent / "fixtures" / "catalog_correctness"


def newest(slug: str) -> LabVersion:
    return LabVersion.objects.filter(lab__slug=slug).order_by("-number").first()


@pytest.mark.parametrize("slug", LABS)
def test_an_alternative_fix_passes(tmp_path, slug):
    spec = newest(slug).spec
    seed = 1
    # Stored as templates (.tmpl: they hold {{ param }} placeholders, so they are not Python yet).
    overlay = {p.name.removesuffix(".tmpl"): p.read_text(encoding="utf-8") for p in (FIXTURES / slug).glob("*.tmpl")}
    assert overlay and all(overlay[name] != spec["solution"].get(name) for name in overlay)
    for name, text in render_files(overlay, choose_params(slug, spec["params"], seed)).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command("gradefix", slug, "--seed", str(seed), "--files", str(tmp_path), "--backend", "docker", stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    failed = [check["name"] for check in report["checks"] if not check["passed"]]
    assert report["passed"] is True and report["fix_percent"] == 100, failed

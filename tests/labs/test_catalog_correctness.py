"""Correctness and data-loading labs: every cover-up fails a gate on every seed, alternative fixes pass.

Real Docker, as CI validates the catalog. Cost on a loaded 2-core machine: the validation test runs
4 labs x 3 seeds x (baseline, solution, 4-7 cover-ups), about 25 minutes in all (the dataloader
baseline alone takes ~45 s a seed); the alternative fixes add four graded runs (~1 min).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from labs.models import LabVersion
from labs.render import choose_params, render_files
from labs.validation import validate_version

pytestmark = [pytest.mark.django_db, pytest.mark.docker]

LABS = [
    "correctness-grad-accumulation",
    "correctness-missing-eval",
    "correctness-weight-conversion-transpose",
    "perf-dataloader-bottleneck",
]
FIXTURES = Path(__file__).parent / "fixtures" / "catalog_correctness"
SEEDS = [0, 1, 2]


def newest(slug: str) -> LabVersion:
    return LabVersion.objects.filter(lab__slug=slug).order_by("-number").first()


@pytest.mark.parametrize("slug", LABS)
def test_every_cover_up_fails_a_gate_on_every_seed(settings, slug):
    settings.SANDBOX_BACKEND = "docker"
    version = newest(slug)
    spec = version.spec
    gates = {check["name"] for check in spec["checks"] if check.get("gate")}
    assert len(spec["bad_fixes"]) >= 4 and gates
    rows = validate_version(version, SEEDS)
    assert all(row.ok for row in rows), [row.as_dict() for row in rows if not row.ok]
    for row in rows:
        if row.variant.startswith("bad:"):
            assert row.outcome == "fail" and row.fix_percent == 0, row.as_dict()
            assert gates & set(row.failed_checks), row.as_dict()
        if row.variant == "solution":
            assert row.outcome == "pass" and row.fix_percent == 100, row.as_dict()


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

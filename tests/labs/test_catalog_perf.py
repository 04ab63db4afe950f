"""perf-dataloader-bottleneck: the store lives in the launcher, and the grader rebuilds what it serves.

The store's latency, cap and counts are tested in tests/sandbox/harness/test_recordstore.py. Here: the
storage client the lab ships reads from a real store and gets exactly the records the grader replays
the recipe on, and a valid fix other than the reference (read each record once, then train from memory)
passes when graded through gradefix with real Docker. The cover-ups (a patched sleep, records built
locally, smaller workloads) are in the lab's bad_fixes/, which validatelab proves score 0 %.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest
import torch
from django.conf import settings
from django.core.management import call_command

from labs.models import LabVersion
from labs.render import choose_params, render_files
from sandbox.harness.faultline_harness import recordstore

SLUG = "perf-dataloader-bottleneck"
LAB = Path(settings.LAB_CATALOG_DIR) / SLUG
FIXTURES = Path(__file__).parent / "fixtures" / "catalog_perf" / SLUG


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_client_reads_from_the_store_exactly_the_records_the_grader_replays(tmp_path, monkeypatch):
    seed = 4242
    client = tmp_path / "dataset.py"
    client.write_text((LAB / "hidden" / "dataset.py").read_text().replace("{{ probe_seed }}", str(seed)))
    store = recordstore.RecordStore(tmp_path, latency_ms=0.5, concurrency=2, floats=32)
    store.start()
    try:
        monkeypatch.setenv("FAULTLINE_RECORD_STORE", str(store.path))
        dataset = load_module("perf_lab_client", client)
        shard = dataset.ClipFeatureStore(size=2048)
        picked = [0, 1, 977, 2047]
        read = [shard[i] for i in picked]
        counts = store.counts()
    finally:
        store.stop()
        sys.modules.pop("perf_lab_client", None)
    grader = load_module("perf_lab_grader", LAB / "grader.py")
    x, y = grader.store_records(seed)
    for (features, label), index in zip(read, picked, strict=True):
        assert torch.equal(features, x[index])
        assert label == int(y[index])
    assert counts == {"reads": 4, "records": 4}


def test_the_client_outside_a_run_says_where_the_store_is(tmp_path, monkeypatch):
    monkeypatch.delenv("FAULTLINE_RECORD_STORE", raising=False)
    client = tmp_path / "dataset.py"
    client.write_text((LAB / "program" / "dataset.py").read_text().replace("{{ data_seed }}", "7"))
    dataset = load_module("perf_lab_client_offline", client)
    with pytest.raises(RuntimeError, match="only inside a lab run"):
        dataset.ClipFeatureStore(size=4)[0]


@pytest.mark.django_db
@pytest.mark.docker
def test_reading_each_record_once_and_caching_it_is_a_valid_fix(tmp_path):
    spec = LabVersion.objects.filter(lab__slug=SLUG).order_by("-number").first().spec
    seed = 1
    overlay = {p.name.removesuffix(".tmpl"): p.read_text(encoding="utf-8") for p in FIXTURES.glob("*.tmpl")}
    assert overlay and overlay["train.py"] != spec["solution"]["train.py"]
    for name, text in render_files(overlay, choose_params(SLUG, spec["params"], seed)).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command("gradefix", SLUG, "--seed", str(seed), "--files", str(tmp_path), "--backend", "docker", stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    checks = {check["name"]: check for check in report["checks"]}
    failed = {name: check["measured"] for name, check in checks.items() if not check["passed"]}
    assert report["passed"] is True and report["fix_percent"] == 100, failed
    assert checks["shard-from-store"]["measured"] == "2048"

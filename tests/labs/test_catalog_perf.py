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
from labs.render import choose_params, render_files, render_text, variant_values
from labs.spec import load_lab, services_env
from sandbox.harness.faultline_harness import recordstore

SLUG = "perf-dataloader-bottleneck"
LAB = Path(settings.LAB_CATALOG_DIR) / SLUG
FIXTURES = Path(__file__).parent / "fixtures" / "catalog_perf" / SLUG


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def start_store(folder: Path, settings: dict) -> recordstore.RecordStore:
    """The store as the launcher starts it from a run's FAULTLINE_SERVICES."""
    config = recordstore.parse_config(json.dumps(settings))["record_store"]
    store = recordstore.RecordStore(folder, **{**config, "latency_ms": 0.5})
    store.start()
    return store


# Seed 0 draws a shard of 3072 records (4 epochs), seed 1 one of 2048 (6 epochs): both sizes are covered.
@pytest.mark.parametrize(
    ("seed", "client_file", "graded"), [(0, "hidden", True), (1, "hidden", True), (0, "program", False)]
)
def test_the_client_reads_from_the_store_exactly_the_records_the_grader_replays(
    tmp_path, monkeypatch, seed, client_file, graded
):
    spec = load_lab(LAB).as_json()
    values = variant_values(spec, seed)
    assert values["shard_size"] * values["epochs"] == 12288
    client = tmp_path / "dataset.py"
    client.write_text(render_text(spec[client_file]["dataset.py"], values))  # hidden/ holds it as a patch
    # The store the run gets holds only the shard this client asks for: practice runs the data seed, graded
    # runs (where hidden/dataset.py replaces the program's) the probe seed.
    services = json.loads(services_env(spec, values, graded=graded)["FAULTLINE_SERVICES"])
    store = start_store(tmp_path, services)
    module = f"perf_lab_client_{client_file}_{seed}"
    try:
        monkeypatch.setenv("FAULTLINE_RECORD_STORE", str(store.path))
        dataset = load_module(module, client)
        shard = dataset.ClipFeatureStore()
        assert len(shard) == values["shard_size"]
        picked = [0, 1, 977, values["shard_size"] - 1]
        read = [shard[i] for i in picked]
        with pytest.raises(IndexError):
            shard[values["shard_size"]]
        counts = store.counts()
    finally:
        store.stop()
        sys.modules.pop(module, None)
    grader = load_module("perf_lab_grader", LAB / "grader.py")
    x, y = grader.store_records(dataset.STORE_SEED, values["shard_size"])
    assert len(x) == values["shard_size"]
    for (features, label), index in zip(read, picked, strict=True):
        assert torch.equal(features, x[index])
        assert label == int(y[index])
    assert counts == {"reads": 4, "records": 4, "records_in_children": 0}


def test_a_client_asking_for_another_shard_is_refused_and_not_counted(tmp_path, monkeypatch):
    spec = load_lab(LAB).as_json()
    values = variant_values(spec, 1)
    # A graded run's store serves the probe seed's shard; the practice client asks for the data seed's.
    client = tmp_path / "dataset.py"
    client.write_text(render_text((LAB / "program" / "dataset.py").read_text(), values))
    store = start_store(tmp_path, json.loads(services_env(spec, values, graded=True)["FAULTLINE_SERVICES"]))
    try:
        monkeypatch.setenv("FAULTLINE_RECORD_STORE", str(store.path))
        dataset = load_module("perf_lab_client_other_shard", client)
        with pytest.raises(ConnectionError, match="closed the connection"):
            dataset.ClipFeatureStore()[0]
        counts = store.counts()
    finally:
        store.stop()
        sys.modules.pop("perf_lab_client_other_shard", None)
    assert counts == {"reads": 0, "records": 0, "records_in_children": 0}


def test_the_grader_replays_the_variants_recipe_not_the_programs_constants():
    grader = load_module("perf_lab_grader_recipe", LAB / "grader.py")
    seen = []

    def records(store_seed, shard_size):
        seen.append(shard_size)
        x = torch.randn(shard_size, grader.FEATURES, generator=torch.Generator().manual_seed(store_seed))
        return x, (x @ grader.label_weights(store_seed)).argmax(1)

    grader.store_records = records
    params = {"init_seed": 3, "lr": 0.1}
    small = grader.replay({**params, "shard_size": 2048, "epochs": 6}, 5).state_dict()
    large = grader.replay({**params, "shard_size": 3072, "epochs": 4}, 5).state_dict()
    assert seen == [2048, 3072]
    assert any(not torch.equal(small[name], large[name]) for name in small)


def test_the_client_outside_a_run_says_where_the_store_is(tmp_path, monkeypatch):
    monkeypatch.delenv("FAULTLINE_RECORD_STORE", raising=False)
    client = tmp_path / "dataset.py"
    client.write_text(render_text((LAB / "program" / "dataset.py").read_text(), {"data_seed": 7, "shard_size": 2048}))
    dataset = load_module("perf_lab_client_offline", client)
    with pytest.raises(RuntimeError, match="only inside a lab run"):
        dataset.ClipFeatureStore(size=4)[0]


@pytest.mark.django_db
@pytest.mark.docker
def test_reading_each_record_once_and_caching_it_is_a_valid_fix(tmp_path):
    spec = LabVersion.objects.filter(lab__slug=SLUG).order_by("-number").first().spec
    seed = 0  # a shard of 3072 records for 4 epochs (test_catalog_correctness grades seed 1: 2048 for 6)
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
    assert checks["shard-from-store"]["measured"] == str(choose_params(SLUG, spec["params"], seed)["shard_size"])

"""Lab folders: the real catalog is valid, and each kind of mistake is rejected with file, field and reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.conf import settings

from labs.render import variant_values
from labs.spec import CATALOG_DIR, FAMILIES, LabSpecError, load_catalog, load_lab, services_env

EXAMPLE = CATALOG_DIR / "nan-lr-unnormalised"


def test_catalog_is_valid_and_covers_every_family():
    specs = load_catalog(settings.LAB_CATALOG_DIR)
    assert len(specs) >= 14
    assert {spec.family for spec in specs} == set(FAMILIES)
    for spec in specs:
        # Validation proves each of these scores 0 %: at least four classic cover-ups a lab, and a gate.
        assert len(spec.bad_fixes) >= 4, f"{spec.slug} has {len(spec.bad_fixes)} cover-ups; at least 4 are needed"
        assert any(check.gate for check in spec.checks), f"{spec.slug} has no gate check"
        assert spec.questions, f"{spec.slug} is not tied to the bank"


@pytest.fixture
def lab_copy(tmp_path) -> Path:
    target = tmp_path / EXAMPLE.name
    shutil.copytree(EXAMPLE, target)
    return target


def edit_yaml(folder: Path, old: str, new: str) -> None:
    path = folder / "lab.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new", "where", "problem"),
    [
        ("family: nan", "family: nans", "family", "one of nan, leak"),
        ("difficulty: 2", "difficulty: 9", "difficulty", "1–5"),
        ("type: ranks_exit_zero", "type: exits_ok", "checks[1].type", "one of"),
        ('op: ">=", value: 400', 'op: ">="', "checks[3] (steps)", "option 'value' is required"),
        ("correct: unnormalised-inputs", "correct: gremlins", "diagnosis.correct", "must be one of"),
        ("timeout_seconds: 60", "timeout_seconds: 6000", "resources.timeout_seconds", "5–600"),
        # A GPU lab whose program never asks for CUDA would hold a GPU that does nothing.
        ("gpu: none", "gpu: optional", "resources.gpu", "no file under program/ mentions cuda"),
        ("  zh: 回归模型的损失几秒内变成 NaN\n", "", "title.zh", "missing or empty"),
    ],
)
def test_lab_yaml_errors_name_the_field(lab_copy, old, new, where, problem):
    edit_yaml(lab_copy, old, new)
    with pytest.raises(LabSpecError) as caught:
        load_lab(lab_copy)
    assert caught.value.where == where
    assert problem in caught.value.problem
    assert str(lab_copy / "lab.yaml") in str(caught.value)


def test_undeclared_placeholder_names_file_and_line(lab_copy):
    train = lab_copy / "program" / "train.py"
    train.write_text(train.read_text() + "print({{ secret_step }})\n")
    with pytest.raises(LabSpecError) as caught:
        load_lab(lab_copy)
    assert caught.value.path.endswith("program/train.py")
    assert caught.value.where.startswith("line ")
    assert "secret_step" in caught.value.problem


def test_missing_solution_and_stray_bad_fix_are_rejected(lab_copy):
    (lab_copy / "bad_fixes" / "undocumented").mkdir()
    (lab_copy / "bad_fixes" / "undocumented" / "train.py").write_text("pass\n")
    with pytest.raises(LabSpecError, match="bad_fixes/undocumented has no entry"):
        load_lab(lab_copy)
    shutil.rmtree(lab_copy / "bad_fixes" / "undocumented")
    shutil.rmtree(lab_copy / "solution")
    with pytest.raises(LabSpecError, match="solution: folder missing"):
        load_lab(lab_copy)


def test_symlinks_in_a_lab_are_refused(lab_copy):
    (lab_copy / "program" / "passwd.txt").symlink_to("/etc/passwd")
    with pytest.raises(LabSpecError, match="symbolic links"):
        load_lab(lab_copy)


def test_metric_check_without_grader_is_rejected(lab_copy):
    (lab_copy / "grader.py").unlink()
    with pytest.raises(LabSpecError, match="needs grader.py"):
        load_lab(lab_copy)


def test_grader_seed_is_rejected_naming_file_and_line(lab_copy):
    hidden = lab_copy / "hidden"
    hidden.mkdir(exist_ok=True)
    (hidden / "probe.py").write_text("import os\n\nSEED = {{ grader_seed }}\n")
    with pytest.raises(LabSpecError) as caught:
        load_lab(lab_copy)
    assert caught.value.path.endswith("hidden/probe.py")
    assert caught.value.where == "line 3"
    assert "grader_seed }} was removed" in caught.value.problem and "probe_seed" in caught.value.problem


def test_probe_seed_only_in_hidden_files(lab_copy):
    hidden = lab_copy / "hidden"
    hidden.mkdir(exist_ok=True)
    (hidden / "probe.py").write_text("SEED = {{ probe_seed }}\n")
    assert load_lab(lab_copy).hidden["probe.py"] == "SEED = {{ probe_seed }}\n"
    train = lab_copy / "program" / "train.py"
    train.write_text(train.read_text() + "print({{ probe_seed }})\n")
    with pytest.raises(LabSpecError, match="only available to files under hidden/") as caught:
        load_lab(lab_copy)
    assert caught.value.path.endswith("program/train.py")


@pytest.mark.parametrize("name", ["grader_seed", "probe_seed"])
def test_seed_names_are_reserved_for_params(lab_copy, name):
    edit_yaml(lab_copy, "params:\n", f"params:\n  {name}: {{int: [1, 5]}}\n")
    with pytest.raises(LabSpecError, match="are reserved") as caught:
        load_lab(lab_copy)
    assert caught.value.where == f"params.{name}"


def test_gate_is_parsed_and_checked(lab_copy):
    gates_before = {c.name for c in load_lab(lab_copy).checks if c.gate}
    edit_yaml(lab_copy, "{name: exit-ok, type: ranks_exit_zero}", "{name: exit-ok, type: ranks_exit_zero, gate: true}")
    spec = load_lab(lab_copy)
    assert {c.name for c in spec.checks if c.gate} == gates_before | {"exit-ok"}
    assert all("gate" not in c.options for c in spec.checks)
    edit_yaml(lab_copy, "ranks_exit_zero, gate: true", "ranks_exit_zero, gate: yes please")
    with pytest.raises(LabSpecError, match="true or false"):
        load_lab(lab_copy)


def test_a_display_check_cannot_be_a_gate(lab_copy):
    edit_yaml(lab_copy, "type: loss_finite,", "type: loss_finite, gate: true,")
    with pytest.raises(LabSpecError, match="display only and cannot be a gate") as caught:
        load_lab(lab_copy)
    assert caught.value.where == "checks[2] (loss-finite).gate"


SERVICES_LAB = CATALOG_DIR / "perf-dataloader-bottleneck"


@pytest.fixture
def store_lab(tmp_path) -> Path:
    target = tmp_path / SERVICES_LAB.name
    shutil.copytree(SERVICES_LAB, target)
    return target


def test_services_are_parsed_and_handed_to_every_run_as_one_variable():
    spec = load_lab(SERVICES_LAB)
    assert spec.services == {
        "record_store": {
            "latency_ms": 2, "concurrency": 8, "floats": 32, "shard_seed": "{{ data_seed }}",
            "shard_size": "{{ shard_size }}", "graded": {"shard_seed": "{{ probe_seed }}"},
        }
    }  # fmt: skip
    env = services_env(spec.as_json(), {"data_seed": 11, "shard_size": 3072, "probe_seed": 5})
    assert json.loads(env["FAULTLINE_SERVICES"]) == {
        "record_store": {"latency_ms": 2, "concurrency": 8, "floats": 32, "shard_seed": 11, "shard_size": 3072}
    }
    # labs without services keep the stored spec (and so the content hash) they had before the key existed
    plain = load_lab(EXAMPLE)
    assert "services" not in plain.as_json() and services_env(plain.as_json()) == {}


@pytest.mark.parametrize(
    ("old", "new", "where", "problem"),
    [
        ("concurrency: 8, ", "", "services.record_store", "needs exactly latency_ms, concurrency, floats"),
        ("concurrency: 8", "concurrency: 0", "services.record_store.concurrency", "a number 1–64"),
        ("concurrency: 8", "concurrency: 2.5", "services.record_store.concurrency", "an integer"),
        ("latency_ms: 2", "latency_ms: fast", "services.record_store.latency_ms", "a number"),
        ("  record_store:", "  cache:", "services", "unknown service 'cache'"),
        ('shard_size: "{{ shard_size }}",', "", "services.record_store", "optionally all of shard_seed, shard_size"),
        (
            'shard_seed: "{{ probe_seed }}"',
            'shard_seed: "{{ nope }}"',
            "services.record_store",
            "{{ nope }} is not a parameter",
        ),
        ("count: records", "count: bytes", "checks[3] (shard-from-store)", "count must be one of reads, records"),
    ],
)
def test_service_errors_name_the_field(store_lab, old, new, where, problem):
    edit_yaml(store_lab, old, new)
    with pytest.raises(LabSpecError) as caught:
        load_lab(store_lab)
    assert caught.value.where == where
    assert problem in caught.value.problem


@pytest.mark.parametrize("seed", [0, 1])
def test_the_store_serves_the_shard_the_runs_client_asks_for(seed):
    # A practice run's client (program/dataset.py) asks for the data seed's shard; a graded run's, replaced
    # by hidden/dataset.py, for the probe seed's. The store must hold exactly that shard in each.
    spec = load_lab(SERVICES_LAB).as_json()
    values = variant_values(spec, seed)
    plain = json.loads(services_env(spec, values)["FAULTLINE_SERVICES"])["record_store"]
    graded = json.loads(services_env(spec, values, graded=True)["FAULTLINE_SERVICES"])["record_store"]
    assert plain["shard_seed"] == values["data_seed"]
    assert graded["shard_seed"] == values["probe_seed"] != values["data_seed"]
    assert plain["shard_size"] == graded["shard_size"] == values["shard_size"]
    assert "STORE_SEED = {{ data_seed }}" in spec["program"]["dataset.py"]
    assert "STORE_SEED = {{ probe_seed }}" in spec["hidden"]["dataset.py"]  # stored as a patch of the program's


def test_a_store_reads_check_needs_the_store(store_lab):
    path = store_lab / "lab.yaml"
    text = path.read_text()
    start = text.index("services:\n")
    end = text.index("entry:", start)
    path.write_text(text[:start] + text[end:])
    with pytest.raises(LabSpecError) as caught:
        load_lab(store_lab)
    assert caught.value.where == "checks (shard-from-store)"
    assert "needs services.record_store" in caught.value.problem


CHECKPOINT_LAB = CATALOG_DIR / "hang-rank0-checkpoint-no-barrier"


def test_service_settings_follow_the_variant_and_a_graded_run_gets_the_graded_ones():
    spec = load_lab(CHECKPOINT_LAB).as_json()
    values = {"store_mb_per_s": 1.1}
    plain = json.loads(services_env(spec, values)["FAULTLINE_SERVICES"])
    graded = json.loads(services_env(spec, values, graded=True)["FAULTLINE_SERVICES"])
    assert plain["checkpoint_store"] == {"mb_per_s": 1.1}
    assert graded["checkpoint_store"] == {"mb_per_s": 1.1, "save_s_min": 2.0, "save_s_max": 10.0}
    assert graded["sealed_records"] == plain["sealed_records"] == {"files": ["steps-rank{rank}.pt"]}


@pytest.fixture
def checkpoint_lab(tmp_path) -> Path:
    target = tmp_path / CHECKPOINT_LAB.name
    shutil.copytree(CHECKPOINT_LAB, target)
    return target


@pytest.mark.parametrize(
    ("old", "new", "where", "problem"),
    [
        ('graded: {save_s_min: 2.0, save_s_max: 10.0}', 'graded: {mb_per_s: "{{ nope }}"}',
         "services.checkpoint_store", "{{ nope }} is not a parameter"),
        ('store_mb_per_s: {float: [1.0, 1.2], digits: 2}', 'store_mb_per_s: {float: [1.0, 1200], digits: 2}',
         "services.checkpoint_store.mb_per_s", "a number"),
        ('graded: {save_s_min: 2.0, save_s_max: 10.0}', 'graded: {save_s_min: 12.0, save_s_max: 10.0}',
         "services.checkpoint_store.save_s_min", "at most save_s_max"),
        ('files: ["steps-rank{rank}.pt"]', 'files: ["../steps.pt"]', "services.sealed_records.files", "{rank}"),
        ("service: checkpoint_store,", "service: record_store,", "checks (every-rank-resumed)", "not in services"),
    ],
)  # fmt: skip
def test_checkpoint_service_errors_name_the_field(checkpoint_lab, old, new, where, problem):
    edit_yaml(checkpoint_lab, old, new)
    with pytest.raises(LabSpecError) as caught:
        load_lab(checkpoint_lab)
    assert caught.value.where == where
    assert problem in caught.value.problem

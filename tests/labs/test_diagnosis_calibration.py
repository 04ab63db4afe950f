"""Lab diagnoses: evidence is checked against the candidate's own variant, and every lab's calibration
diagnoses (labs/calibration/<slug>.yaml) score inside their bands, scored as the workspace scores them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from labs import services
from labs.diagnosis import grade_diagnosis, possible_values, quoted_params, variant_keys, variant_rubric
from labs.diagnosis_calibration import (
    CALIBRATION_DIR,
    KINDS,
    WRONG_EVIDENCE_GAP,
    CalibrationError,
    load_calibration,
    score_calibration,
)
from labs.render import choose_params, render_text
from labs.spec import LabSpecError, load_lab

ROOT = Path(__file__).resolve().parents[2]
CATALOG = Path(settings.LAB_CATALOG_DIR)
SLUGS = sorted(p.name for p in CATALOG.iterdir() if (p / "lab.yaml").is_file())
ACCUM = "correctness-grad-accumulation"


def spec_of(slug: str) -> dict:
    """The spec as a lab version stores it: what ``services.submit_diagnosis`` grades against."""
    return load_lab(CATALOG / slug).as_json()


def test_every_lab_has_a_calibration_file_and_nothing_else_is_there():
    assert sorted(p.stem for p in CALIBRATION_DIR.glob("*.yaml")) == SLUGS


@pytest.mark.parametrize("slug", SLUGS)
def test_calibration_diagnoses_score_inside_their_bands(slug):
    spec = spec_of(slug)
    rows = score_calibration(spec, load_calibration(CALIBRATION_DIR / f"{slug}.yaml", spec))
    assert {(row["kind"], row["lang"]) for row in rows} == {(k, lang) for k in KINDS for lang in ("en", "zh")}
    outside = [row for row in rows if not row["ok"]]
    assert not outside, "\n".join(
        f"{r['kind']} {r['lang']} seed {r['seed']}: score {r['score']}, band {r['band']}" for r in outside
    )


# --- the variant-evidence rule -------------------------------------------------------------------------------

GOOD_ACCUM = (
    "The grad norm printed each step is {n} times what one full-batch step gives, because ACCUM_STEPS = {n} "
    "micro-batch losses are summed without dividing by {n}. That multiplies the effective learning rate, so "
    "scaling each loss by 1/k makes the step equivalent to the full batch."
)


def test_own_variant_evidence_scores_higher_than_another_variants():
    spec = spec_of(ACCUM)
    own, other = choose_params(ACCUM, spec["params"], 1), choose_params(ACCUM, spec["params"], 3)
    assert own["accum_steps"] != other["accum_steps"]
    right, detail = grade_diagnosis(
        spec["diagnosis"], "unscaled-accumulation", GOOD_ACCUM.format(n=own["accum_steps"]), own
    )
    wrong, wrong_detail = grade_diagnosis(
        spec["diagnosis"], "unscaled-accumulation", GOOD_ACCUM.format(n=other["accum_steps"]), own
    )
    assert right >= 85 and right - wrong >= WRONG_EVIDENCE_GAP
    assert detail["variant_points"] == ["own-run"]
    [own_point] = [p for p in detail["points"] if p["key"] == "own-run"]
    [missed] = [p for p in wrong_detail["points"] if p["key"] == "own-run"]
    assert own_point["fraction"] == 1 and missed["fraction"] == 0
    # The label names this variant's value once it is scored, so the feedback says what was expected.
    assert str(own["accum_steps"]) in own_point["label"]["en"]


@pytest.mark.parametrize("slug", SLUGS)
def test_every_lab_has_a_point_only_its_own_variant_earns(slug):
    """Issue 13: evidence is checked against the variant the candidate got, in every lab of the catalog; and
    the point really differs between variants (seeds 0-5 do not all render it the same)."""
    spec = spec_of(slug)
    keys = variant_keys(spec["diagnosis"])
    assert keys, f"{slug}: no rubric point quotes a {{{{ param }}}} of the variant"
    rendered = {
        str([p["concepts"] for p in variant_rubric(spec["diagnosis"], choose_params(slug, spec["params"], seed))
             if p["key"] in keys])
        for seed in range(6)
    }  # fmt: skip
    assert len(rendered) > 1, f"{slug}: the variant point reads the same on seeds 0-5"


def hedgeable(slug: str) -> tuple[list[dict], list[dict]]:
    """The lab's variant rubric points, and the parameters with few values they quote."""
    spec = spec_of(slug)
    points = [p for p in spec["diagnosis"]["rubric"] if p["key"] in variant_keys(spec["diagnosis"])]
    quoted = set().union(*(quoted_params(p) for p in points))
    return points, [p for p in spec["params"] if p["name"] in quoted and possible_values(p, spec["params"])]


HEDGEABLE = [slug for slug in SLUGS if hedgeable(slug)[1]]


def test_the_labs_with_few_valued_variant_facts_are_all_checked():
    # nan-lr-unnormalised quotes a float, not listable; the others quote choices, short ranges or counts.
    assert len(HEDGEABLE) >= 7 and ACCUM in HEDGEABLE


@pytest.mark.parametrize("slug", HEDGEABLE)
def test_hedging_over_every_possible_value_earns_no_variant_point(slug):
    """Naming every value the variant could have had ("4 or 8 times") must not buy the own-run point:
    a sentence that states another variant's value contradicts it, as a misconception does."""
    spec = spec_of(slug)
    points, params = hedgeable(slug)
    own = choose_params(slug, spec["params"], 1)
    sentences = []
    for point in points:
        for synonym in point["concepts"][0]:
            for param in params:
                values = possible_values(param, spec["params"])
                rendered = {render_text(synonym, {**own, param["name"]: v}) for v in values}
                if len(rendered) > 1:
                    sentences.append("In this run the value was " + " or ".join(sorted(rendered)) + ".")
    hedged, detail = grade_diagnosis(spec["diagnosis"], spec["diagnosis"]["correct"], " ".join(sentences), own,
                                     spec["params"])  # fmt: skip
    for point in detail["points"]:
        if point["key"] in detail["variant_points"]:
            assert point["fraction"] == 0 and point["contradicted"], (slug, point)


def test_hedging_over_a_wide_integer_range_with_values_from_the_text_earns_nothing():
    """Too many values to list ("300-700 rows"): the numbers the diagnosis itself names are checked instead,
    so quoting another seed's count beside one's own contradicts the point, and one's own alone earns it."""
    slug = "hang-rank0-collective"
    spec = spec_of(slug)
    own = choose_params(slug, spec["params"], 1)
    other = choose_params(slug, spec["params"], 0)
    assert own["val_rows0"] != other["val_rows0"]
    mine = f"Rank 0 validates {own['val_rows0']} rows and rank 1 validates {own['val_rows1']} rows."
    hedged = f"Rank 0 validates {own['val_rows0']} rows or {other['val_rows0']} rows of its site."
    near = f"Rank 0 validates {own['val_rows0'] + 1} rows or {own['val_rows0']} rows of its site."
    results = {}
    for name, text in [("mine", mine), ("hedged", hedged), ("near", near)]:
        _, detail = grade_diagnosis(spec["diagnosis"], spec["diagnosis"]["correct"], text, own, spec["params"])
        [point] = [p for p in detail["points"] if p["key"] == "own-run"]
        results[name] = (point["fraction"], bool(point["contradicted"]))
    assert results == {"mine": (1.0, False), "hedged": (0, True), "near": (0, True)}


def test_a_denied_other_value_keeps_the_own_value_credited():
    spec = spec_of(ACCUM)
    own = choose_params(ACCUM, spec["params"], 1)
    other = 12 - own["accum_steps"]  # the lab's two choices are 4 and 8
    text = (
        f"The gradients are accumulated {own['accum_steps']} times, not {other}, and ACCUM_STEPS = "
        f"{own['accum_steps']} losses are summed without dividing, so each update is too large."
    )
    _, detail = grade_diagnosis(spec["diagnosis"], "unscaled-accumulation", text, own, spec["params"])
    [point] = [p for p in detail["points"] if p["key"] == "own-run"]
    assert point["fraction"] == 1 and not point["contradicted"]


def test_a_rubric_with_variant_points_refuses_to_score_without_the_variant():
    spec = spec_of(ACCUM)
    with pytest.raises(ValueError, match="accum_steps"):
        grade_diagnosis(spec["diagnosis"], "unscaled-accumulation", "The gradient is too large by 4 times.")


@pytest.mark.django_db
def test_the_workspace_grades_evidence_against_the_attempts_own_seed(candidate):
    from tests.labs.helpers import publish

    lab = publish(ACCUM)
    spec = lab.current.spec
    attempts = {seed: services.start_attempt(candidate, lab, version=lab.current, seed=seed) for seed in (1, 3)}
    text = GOOD_ACCUM.format(n=choose_params(ACCUM, spec["params"], 1)["accum_steps"])
    own = services.submit_diagnosis(attempts[1], "unscaled-accumulation", text)
    other = services.submit_diagnosis(attempts[3], "unscaled-accumulation", text)
    assert own.diagnosis_score - other.diagnosis_score >= WRONG_EVIDENCE_GAP


def manage(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], input=stdin, capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_scorediagnosis_matches_evidence_to_the_seed():
    text = GOOD_ACCUM.format(n=choose_params(ACCUM, spec_of(ACCUM)["params"], 1)["accum_steps"])
    one, three = (
        json.loads(
            manage("scorediagnosis", ACCUM, "--seed", seed, "--cause", "unscaled-accumulation", stdin=text).stdout
        )
        for seed in ("1", "3")
    )
    assert one["variant_points"] == ["own-run"] and one["score"] - three["score"] >= WRONG_EVIDENCE_GAP


def test_scorediagnosis_prints_the_calibration_table():
    done = manage("scorediagnosis", ACCUM, "--calibration")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["lab", "kind", "lang", "seed", "score", "band", "ok"]
    assert len(rows) >= 8 and all(row.startswith(ACCUM) and row.endswith("yes") for row in rows)


# --- malformed files and specs are rejected with file, entry and field -------------------------------------

BASE_ENTRY = {"kind": "good", "seed": 1, "lang": "en", "choice": "unscaled-accumulation", "text": "x" * 30}


def write(tmp_path: Path, entries: list[dict]) -> Path:
    import yaml

    path = tmp_path / f"{ACCUM}.yaml"
    path.write_text(yaml.safe_dump({"diagnoses": entries}, allow_unicode=True))
    return path


@pytest.mark.parametrize(
    ("change", "where", "problem"),
    [
        ({"kind": "great"}, "diagnoses[0].kind", "one of good"),
        ({"lang": "fr"}, "diagnoses[0] (good).lang", "en or zh"),
        ({"choice": "nope"}, "diagnoses[0] (good).choice", "one of unscaled-accumulation"),
        ({"choice": "lr-too-high"}, "diagnoses[0] (good).choice", "the correct option"),
        ({"seed": -1}, "diagnoses[0] (good).seed", "0 or more"),
        ({"text": "too short"}, "diagnoses[0] (good).text", "20 characters"),
        ({"text": "The factor is {{ nope }} here, clearly."}, "diagnoses[0] (good).text", "{{ nope }}"),
        ({"evidence_seed": 3}, "diagnoses[0] (good).evidence_seed", "only a wrong-evidence"),
        ({"colour": "red"}, "diagnoses[0].colour", "unknown field"),
        ({"kind": "wrong-evidence", "evidence_seed": 2}, "diagnoses[0] (wrong-evidence).evidence_seed", "share"),
        ({"kind": "wrong-evidence"}, "diagnoses[0] (wrong-evidence).evidence_seed", "missing"),
    ],
)
def test_a_malformed_calibration_entry_names_file_entry_and_field(tmp_path, change, where, problem):
    path = write(tmp_path, [{**BASE_ENTRY, **change}])
    with pytest.raises(CalibrationError) as caught:
        load_calibration(path, spec_of(ACCUM))
    assert str(caught.value).startswith(f"{path}: {where}: ") and problem in str(caught.value)


def test_a_calibration_file_needs_every_kind_in_both_languages(tmp_path):
    path = write(tmp_path, [BASE_ENTRY])
    with pytest.raises(CalibrationError, match="needs at least one good diagnosis in zh"):
        load_calibration(path, spec_of(ACCUM))


@pytest.fixture
def lab_copy(tmp_path) -> Path:
    target = tmp_path / ACCUM
    shutil.copytree(CATALOG / ACCUM, target)
    return target


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ('"{{ accum_steps }} times"', '"{{ micro_batches }} times"', "diagnosis.rubric[3].concepts"),
        (
            'en: "The learning rate is simply too high for this model"',
            'en: "The learning rate {{ lr }} is simply too high for this model"',
            "diagnosis.options[1].en",
        ),
    ],
)
def test_the_spec_checks_placeholders_in_the_diagnosis(lab_copy, old, new, where):
    path = lab_copy / "lab.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(LabSpecError) as caught:
        load_lab(lab_copy)
    assert caught.value.where == where

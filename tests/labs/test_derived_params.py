"""Derived parameters: computed from the drawn ones, refused at load when unsafe or broken, and quotable
in a diagnosis as a fact of the variant."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from labs import derived
from labs.diagnosis import grade_diagnosis, other_variant_claims, possible_values
from labs.render import choose_params
from labs.spec import CATALOG_DIR, LabSpecError, load_lab

EXAMPLE = CATALOG_DIR / "nan-lr-unnormalised"
PARAMS = "params:\n  lr: {choices: [0.01, 0.02, 0.05]}\n  scale: {float: [40.0, 120.0], digits: 1}\n"


@pytest.fixture
def lab_copy(tmp_path) -> Path:
    target = tmp_path / EXAMPLE.name
    shutil.copytree(EXAMPLE, target)
    return target


def with_params(folder: Path, extra: str) -> None:
    path = folder / "lab.yaml"
    text = path.read_text()
    assert PARAMS in text
    path.write_text(text.replace(PARAMS, PARAMS + extra, 1))


def test_a_derived_value_follows_the_drawn_ones_and_draws_nothing(lab_copy):
    before = choose_params("nan-lr-unnormalised", load_lab(lab_copy).params, 7)
    with_params(lab_copy, '  steps_at_scale: {derived: "ceil(scale / 10) * 3 + lr * 100"}\n')
    spec = load_lab(lab_copy)
    after = choose_params("nan-lr-unnormalised", spec.params, 7)
    # The parameters the seed draws keep their values: the new one is computed, not drawn.
    assert {k: v for k, v in after.items() if k != "steps_at_scale"} == before
    expected = math.ceil(before["scale"] / 10) * 3 + before["lr"] * 100
    assert after["steps_at_scale"] == pytest.approx(expected)
    # Stored as its expression, so the version's parameters can be drawn again from the stored spec.
    [stored] = [p for p in spec.as_json()["params"] if p["name"] == "steps_at_scale"]
    assert stored["kind"] == "derived" and "ceil" in stored["expr"]
    assert choose_params("nan-lr-unnormalised", spec.as_json()["params"], 7) == after


def test_labs_without_derived_parameters_keep_their_content_hash():
    spec = load_lab(EXAMPLE)
    assert all("expr" not in p for p in spec.as_json()["params"])


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ('__import__(\\"os\\").system(\\"id\\")', "is not allowed"),
        ("scale.real", "is not allowed"),
        ("scale ** 2", "is not allowed"),
        ("later + 1", "'later' is not a parameter declared before"),
        ("scale / (lr - lr)", "divides by zero"),
        ("", "non-empty"),
    ],
)
def test_a_bad_expression_is_refused_with_the_parameter_named(lab_copy, expression, problem):
    with_params(lab_copy, f'  bad: {{derived: "{expression}"}}\n  later: {{int: [1, 2]}}\n')
    with pytest.raises(LabSpecError) as caught:
        load_lab(lab_copy)
    assert caught.value.where == "params.bad.derived"
    assert problem in caught.value.problem


@pytest.mark.parametrize(
    "expression",
    # round(x, n) with a large negative n builds 10**-n before any result can be checked: minutes of CPU on
    # the web server that loads the lab. Every function takes the arguments its arithmetic use needs.
    ["round(1, -100000000)", "round(scale, 2)", "ceil(scale, lr)", "abs()", "max(scale)", "10000000000000 * 0"],
)
def test_arguments_and_numbers_that_could_stall_the_server_are_refused(expression):
    with pytest.raises(derived.DerivedError):
        derived.parse(expression)


def test_evaluation_refuses_huge_values_instead_of_building_them():
    with pytest.raises(derived.DerivedError, match="out of range"):
        derived.evaluate("a * a * a", {"a": 10**6})


def test_few_combinations_are_listed_and_many_fall_back_to_neighbours():
    params = [
        {"name": "a", "kind": "choice", "choices": [1, 2]},
        {"name": "b", "kind": "int", "low": 10, "high": 12, "digits": 3},
        {"name": "total", "kind": "derived", "expr": "a + b"},
        {"name": "big", "kind": "int", "low": 1, "high": 100000, "digits": 3},
        {"name": "rows", "kind": "derived", "expr": "big // 10"},
    ]
    assert possible_values(params[2], params) == [11, 12, 13, 14]
    assert possible_values(params[4], params) == []
    point = {"key": "own-run", "concepts": [["{{ rows }} rows"]]}
    [claim] = other_variant_claims(point, {"rows": 40, "big": 400}, params)
    others = claim["pattern"][0]
    assert "40 rows" not in others and "39 rows" in others and "65 rows" in others and "66 rows" not in others


def test_a_diagnosis_quoting_a_derived_fact_earns_the_point_only_with_its_own_value():
    spec = {
        "correct": "c",
        "rubric": [{"key": "own-run", "weight": 1, "en": "{{ batches }} batches", "zh": "{{ batches }} 个 batch",
                    "concepts": [["{{ batches }} batches", "{{ batches }} 个 batch"]]}],
    }  # fmt: skip
    params = [
        {"name": "rows", "kind": "int", "low": 100, "high": 120, "digits": 3},
        {"name": "batches", "kind": "derived", "expr": "ceil(rows / 8)"},
    ]
    own = choose_params("x", params, 3)
    _, mine = grade_diagnosis(spec, "c", f"Rank 1 ran out after {own['batches']} batches.", own, params)
    _, hedged = grade_diagnosis(
        spec, "c", f"Rank 1 ran out after {own['batches']} or {own['batches'] + 1} batches.", own, params
    )
    assert mine["evidence_percent"] == 100
    assert hedged["evidence_percent"] == 0

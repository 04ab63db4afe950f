"""Score a written diagnosis: the root cause chosen, plus the rubric concepts the evidence names.

Deterministic and explainable: the same text always gets the same score, and each rubric
point lists the synonyms that matched and the concepts still missing, in both languages.

A rubric point's synonyms (and its labels) may use the lab's ``{{ param }}`` placeholders, e.g.
``["{{ accum_steps }} times", "{{ accum_steps }} 倍"]``. They are filled in with the values of the
attempt's own variant before matching, so such a point is earned only by evidence from the
candidate's own runs: a diagnosis that quotes another variant's accumulation factor, mask value or
hooked layer leaves it missing and scores lower than one that quotes its own. Hedging does not help
either: where a parameter has few possible values, a sentence that states another of them ("4 or 8
times") contradicts the point, as a misconception does, so listing every value earns nothing.
"""

from __future__ import annotations

import re
from itertools import product
from math import prod

from labs import derived
from labs.render import render_text
from labs.spec import PLACEHOLDER_RE
from questions.concepts import answer_coverage

ROOT_CAUSE_POINTS = 50
EVIDENCE_POINTS = 50


def quoted_params(point: dict) -> set[str]:
    """The parameters a rubric point's synonyms name with ``{{ param }}``."""
    return {m.group(1) for group in point["concepts"] for s in group for m in PLACEHOLDER_RE.finditer(s)}


def variant_keys(diagnosis_spec: dict) -> list[str]:
    """Keys of the rubric points whose synonyms depend on the attempt's variant."""
    return [point["key"] for point in diagnosis_spec["rubric"] if quoted_params(point)]


# A parameter with at most this many possible values can be hedged over in one sentence ("4 or 8
# times"), so its other values are checked for; a float range has too many to list in prose.
HEDGEABLE_VALUES = 50


# A derived parameter's values are searched over its inputs' values while there are this few combinations.
MAX_COMBINATIONS = 5000
# Otherwise an integral derived value (a count) is hedged over with its neighbours: this many each side.
NEIGHBOURS = 25
NUMBER_RE = re.compile(r"(?<![\d.])\d{1,9}(?![\d.]\d)")


def possible_values(param: dict, params: list[dict] | None = None) -> list:
    """Every value a declared parameter (``LabSpec.as_json()["params"]`` entry) can take, when few."""
    if param["kind"] == "choice":
        return list(param["choices"])
    if param["kind"] == "int" and param["high"] - param["low"] < HEDGEABLE_VALUES:
        return list(range(int(param["low"]), int(param["high"]) + 1))
    if param["kind"] == "derived":
        by_name = {p["name"]: p for p in params or []}
        inputs = sorted(derived.names(param["expr"]))
        options = [possible_values(by_name[name], params) if name in by_name else [] for name in inputs]
        if not all(options) or prod(len(o) for o in options) > MAX_COMBINATIONS:
            return []
        combos = (dict(zip(inputs, combo, strict=True)) for combo in product(*options))
        return sorted({derived.evaluate(param["expr"], combo) for combo in combos})
    return []


def other_variant_claims(point: dict, values: dict, params: list[dict], text: str = "") -> list[dict]:
    """The point's synonyms filled in with every other value its parameters could have had, as one
    misconception: a sentence stating one of them contradicts the point (a denial such as "4, not 8"
    does not). An integer parameter with too many values to list is checked against the whole numbers the
    diagnosis ``text`` itself names within its range, so "607 rows or 489 rows" contradicts it too."""
    own = {render_text(s, values) for group in point["concepts"] for s in group}
    used = quoted_params(point)
    named = {int(n) for n in NUMBER_RE.findall(text)}
    others: set[str] = set()
    for param in params:
        if param["name"] not in used:
            continue
        candidates = possible_values(param, params)
        if not candidates and param["kind"] == "int":
            candidates = sorted(n for n in named if param["low"] <= n <= param["high"])
        if not candidates and param["kind"] == "derived" and isinstance(values.get(param["name"]), int):
            mine = values[param["name"]]
            candidates = [v for v in range(mine - NEIGHBOURS, mine + NEIGHBOURS + 1) if v >= 0]
        for value in candidates:
            alt = {**values, param["name"]: value}
            others.update(render_text(s, alt) for group in point["concepts"] for s in group if PLACEHOLDER_RE.search(s))
    others -= own
    if not others:
        return []
    return [
        {
            "pattern": [sorted(others)],
            "en": "This names a value that another variant of the lab has, not one your own runs showed: "
            "evidence counts only when it quotes what you observed.",
            "zh": "这里写的是实验其他变体的取值，而不是你自己的运行中出现的值：证据只有引用你观察到的内容才算数。",
            "penalty": 1.0,
        }
    ]


def variant_rubric(
    diagnosis_spec: dict, values: dict | None, params: list[dict] | None = None, text: str = ""
) -> list[dict]:
    """The rubric with every placeholder filled in from ``values`` (the attempt's parameters); with the
    lab's ``params``, each variant point also carries ``other_variant_claims`` as its misconceptions
    (``text``: the diagnosis being graded, whose own numbers are checked against wide integer ranges).

    Raises ``ValueError`` when a placeholder has no value: matching the literal ``{{ name }}`` would
    silently make the point unreachable (or reachable by typing the placeholder)."""
    values = values or {}
    rubric = []
    for point in diagnosis_spec["rubric"]:
        concepts = [[render_text(s, values) for s in group] for group in point["concepts"]]
        left = [m.group(1) for group in concepts for s in group for m in PLACEHOLDER_RE.finditer(s)]
        if left:
            raise ValueError(f"diagnosis rubric point {point['key']!r} needs the variant's {left[0]!r}")
        labels = {lang: render_text(point[lang], values) for lang in ("en", "zh")}
        misconceptions = other_variant_claims(point, values, params or [], text)
        rubric.append({**point, **labels, "concepts": concepts, "misconceptions": misconceptions})
    return rubric


def grade_diagnosis(
    diagnosis_spec: dict, choice: str, text: str, values: dict | None = None, params: list[dict] | None = None
) -> tuple[int, dict]:
    """(score 0–100, detail) for a chosen root cause and the evidence text.

    ``values``: the attempt's variant parameters (``labs.render.choose_params``); needed when the
    rubric has points that check the variant's own facts. ``params``: the lab's declared parameters,
    so that quoting another variant's value contradicts such a point."""
    rubric = variant_rubric(diagnosis_spec, values, params, text)
    points, percent = answer_coverage(
        text, [(p["key"], p["weight"], p["concepts"], p["misconceptions"]) for p in rubric]
    )
    correct = choice == diagnosis_spec["correct"]
    score = (ROOT_CAUSE_POINTS if correct else 0) + round(EVIDENCE_POINTS * percent / 100)
    labels = {p["key"]: {"en": p["en"], "zh": p["zh"]} for p in rubric}
    detail = {
        "root_cause_correct": correct,
        "root_cause_points": ROOT_CAUSE_POINTS if correct else 0,
        "evidence_percent": percent,
        "evidence_points": round(EVIDENCE_POINTS * percent / 100),
        "points": [{**p.as_dict(), "label": labels[p.key]} for p in points],
        "variant_points": variant_keys(diagnosis_spec),
    }
    return score, detail

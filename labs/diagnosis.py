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

from dataclasses import dataclass
from itertools import product
from math import prod
from pathlib import Path

import yaml

from labs import derived
from labs.render import choose_params, render_text
from labs.spec import PLACEHOLDER_RE, YAML_LOADER
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


def other_variant_claims(point: dict, values: dict, params: list[dict]) -> list[dict]:
    """The point's synonyms filled in with every other value its parameters could have had, as one
    misconception: a sentence stating one of them contradicts the point (a denial such as "4, not 8"
    does not)."""
    own = {render_text(s, values) for group in point["concepts"] for s in group}
    used = quoted_params(point)
    others: set[str] = set()
    for param in params:
        if param["name"] not in used:
            continue
        candidates = possible_values(param, params)
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


def variant_rubric(diagnosis_spec: dict, values: dict | None, params: list[dict] | None = None) -> list[dict]:
    """The rubric with every placeholder filled in from ``values`` (the attempt's parameters); with the
    lab's ``params``, each variant point also carries ``other_variant_claims`` as its misconceptions.

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
        misconceptions = other_variant_claims(point, values, params or [])
        rubric.append({**point, **labels, "concepts": concepts, "misconceptions": misconceptions})
    return rubric


def grade_diagnosis(
    diagnosis_spec: dict, choice: str, text: str, values: dict | None = None, params: list[dict] | None = None
) -> tuple[int, dict]:
    """(score 0–100, detail) for a chosen root cause and the evidence text.

    ``values``: the attempt's variant parameters (``labs.render.choose_params``); needed when the
    rubric has points that check the variant's own facts. ``params``: the lab's declared parameters,
    so that quoting another variant's value contradicts such a point."""
    rubric = variant_rubric(diagnosis_spec, values, params)
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


# Calibration: labs/calibration/<slug>.yaml holds diagnoses of known quality, each scored in CI
# exactly as the workspace scores an attempt's diagnosis, and each must land in its kind's band.
CALIBRATION_DIR = Path(__file__).resolve().parent / "calibration"
KINDS = ("good", "keywords", "wrong-evidence", "wrong-cause")
GOOD_MIN = 85  # right cause and this variant's evidence, in sentences: the evidence covers >= 70 %
KEYWORDS_MAX = 65  # 50 for the choice + a bare term list, which earns a quarter of each concept at most
WRONG_CAUSE_MAX = 40  # no choice points; a story about another cause must cover under 80 % of the rubric
WRONG_EVIDENCE_GAP = 10  # below the good entry of the same seed and language, at least
ENTRY_FIELDS = {"kind", "seed", "lang", "choice", "text", "evidence_seed"}


class CalibrationError(ValueError):
    """A calibration file is malformed; the message names the file, the entry and the field."""

    def __init__(self, path: Path | str, where: str, problem: str) -> None:
        super().__init__(f"{path}: {where}: {problem}")


@dataclass(frozen=True)
class CalibrationEntry:
    kind: str
    seed: int
    lang: str
    choice: str
    text: str  # as written, possibly with {{ param }} placeholders
    evidence_seed: int | None = None  # whose values the text quotes; the attempt's own seed when None

    def band(self) -> str:
        return {
            "good": f">= {GOOD_MIN}",
            "keywords": f"<= {KEYWORDS_MAX}",
            "wrong-evidence": f"<= good - {WRONG_EVIDENCE_GAP}",
            "wrong-cause": f"<= {WRONG_CAUSE_MAX}",
        }[self.kind]


def calibration_path(slug: str) -> Path:
    return CALIBRATION_DIR / f"{slug}.yaml"


def load_calibration(path: Path, spec: dict) -> list[CalibrationEntry]:
    """The entries of one lab's calibration file, checked against the lab's spec (``LabSpec.as_json()``)."""
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise CalibrationError(path, "file", f"not readable YAML: {exc}") from None
    if not isinstance(raw, dict) or set(raw) != {"diagnoses"} or not isinstance(raw["diagnoses"], list):
        raise CalibrationError(path, "top level", "must be a mapping with one field, diagnoses: a list")
    diagnosis = spec["diagnosis"]
    options = [o["key"] for o in diagnosis["options"]]
    params = {p["name"] for p in spec["params"]}
    variant_params = set().union(*(quoted_params(point) for point in diagnosis["rubric"]))
    entries = []
    for index, item in enumerate(raw["diagnoses"]):
        where = f"diagnoses[{index}]"
        if not isinstance(item, dict):
            raise CalibrationError(path, where, "must be a mapping of kind, seed, lang, choice and text")
        unknown = sorted(set(item) - ENTRY_FIELDS)
        if unknown:
            raise CalibrationError(
                path, f"{where}.{unknown[0]}", f"unknown field (known: {', '.join(sorted(ENTRY_FIELDS))})"
            )
        kind = item.get("kind")
        if kind not in KINDS:
            raise CalibrationError(path, f"{where}.kind", f"one of {', '.join(KINDS)}, got {kind!r}")
        where = f"diagnoses[{index}] ({kind})"
        for name in ("seed", "evidence_seed"):
            value = item.get(name, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise CalibrationError(path, f"{where}.{name}", f"an integer 0 or more, got {value!r}")
        if "seed" not in item:
            raise CalibrationError(path, f"{where}.seed", "missing")
        if item.get("lang") not in ("en", "zh"):
            raise CalibrationError(path, f"{where}.lang", f"en or zh, got {item.get('lang')!r}")
        if item.get("choice") not in options:
            raise CalibrationError(path, f"{where}.choice", f"one of {', '.join(options)}, got {item.get('choice')!r}")
        right = item["choice"] == diagnosis["correct"]
        if right == (kind == "wrong-cause"):
            wanted = "another option than" if kind == "wrong-cause" else "the correct option,"
            raise CalibrationError(
                path, f"{where}.choice", f"a {kind} diagnosis chooses {wanted} {diagnosis['correct']!r}"
            )
        text = item.get("text")
        if not isinstance(text, str) or len(text.strip()) < 20:
            raise CalibrationError(path, f"{where}.text", "a diagnosis of 20 characters at least")
        for match in PLACEHOLDER_RE.finditer(text):
            if match.group(1) not in params:
                raise CalibrationError(
                    path, f"{where}.text", f"{{{{ {match.group(1)} }}}} is not a parameter of the lab"
                )
        evidence_seed = item.get("evidence_seed")
        if evidence_seed is not None and kind != "wrong-evidence":
            raise CalibrationError(
                path, f"{where}.evidence_seed", "only a wrong-evidence diagnosis quotes another seed"
            )
        if kind == "wrong-evidence" and variant_params:
            if evidence_seed is None:
                raise CalibrationError(path, f"{where}.evidence_seed", "missing: whose variant the evidence comes from")
            own = choose_params(spec["slug"], spec["params"], item["seed"])
            other = choose_params(spec["slug"], spec["params"], evidence_seed)
            same = sorted(name for name in variant_params if own[name] == other[name])
            if same:
                raise CalibrationError(
                    path,
                    f"{where}.evidence_seed",
                    f"seeds {item['seed']} and {evidence_seed} share {same[0]}={own[same[0]]!r}",
                )
        entries.append(CalibrationEntry(kind, item["seed"], item["lang"], item["choice"], text, evidence_seed))
    missing = [
        (k, lang) for k in KINDS for lang in ("en", "zh") if not any(e.kind == k and e.lang == lang for e in entries)
    ]
    if missing:
        raise CalibrationError(path, "diagnoses", f"needs at least one {missing[0][0]} diagnosis in {missing[0][1]}")
    for index, entry in enumerate(entries):
        if entry.kind == "wrong-evidence" and not any(
            e.kind == "good" and e.seed == entry.seed and e.lang == entry.lang for e in entries
        ):
            raise CalibrationError(
                path,
                f"diagnoses[{index}] (wrong-evidence)",
                f"no good diagnosis with seed {entry.seed} in {entry.lang} to compare with",
            )
    return entries


def score_calibration(spec: dict, entries: list[CalibrationEntry]) -> list[dict]:
    """One row per entry: lab, kind, lang, seed, score, band, ok. Scored as ``services.submit_diagnosis``
    scores an attempt of that seed; the text is filled in with the values of the seed it quotes."""
    rows = []
    for entry in entries:
        values = choose_params(spec["slug"], spec["params"], entry.seed)
        quoted = (
            values if entry.evidence_seed is None else choose_params(spec["slug"], spec["params"], entry.evidence_seed)
        )
        text = render_text(entry.text, quoted).strip()
        score, _ = grade_diagnosis(spec["diagnosis"], entry.choice, text, values, spec["params"])
        rows.append({"lab": spec["slug"], "kind": entry.kind, "lang": entry.lang, "seed": entry.seed, "score": score,
                     "band": entry.band(), "evidence_seed": entry.evidence_seed})  # fmt: skip
    for row in rows:
        if row["kind"] == "good":
            row["ok"] = row["score"] >= GOOD_MIN
        elif row["kind"] == "keywords":
            row["ok"] = row["score"] <= KEYWORDS_MAX
        elif row["kind"] == "wrong-cause":
            row["ok"] = row["score"] <= WRONG_CAUSE_MAX
        else:
            goods = [
                r["score"]
                for r in rows
                if r["kind"] == "good" and r["seed"] == row["seed"] and r["lang"] == row["lang"]
            ]
            row["ok"] = row["score"] <= min(goods) - WRONG_EVIDENCE_GAP
    return rows

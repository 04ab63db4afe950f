"""Calibration of lab diagnoses: ``labs/calibration/<slug>.yaml`` holds diagnoses of known quality, each
scored in CI exactly as the workspace scores an attempt's diagnosis (``labs.diagnosis.grade_diagnosis``), and
each must land in its kind's band (docs/lab-format.md, "Diagnosis")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from labs.diagnosis import grade_diagnosis, quoted_params
from labs.render import choose_params, render_text
from labs.spec import PLACEHOLDER_RE, YAML_LOADER

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

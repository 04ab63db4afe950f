"""Score a written diagnosis: the root cause chosen, plus the rubric concepts the evidence names.

Deterministic and explainable: the same text always gets the same score, and each rubric
point lists the synonyms that matched and the concepts still missing, in both languages.
"""

from __future__ import annotations

from questions.concepts import answer_coverage

ROOT_CAUSE_POINTS = 50
EVIDENCE_POINTS = 50


def grade_diagnosis(diagnosis_spec: dict, choice: str, text: str) -> tuple[int, dict]:
    rubric = [(p["key"], p["weight"], p["concepts"]) for p in diagnosis_spec["rubric"]]
    points, percent = answer_coverage(text, rubric)
    correct = choice == diagnosis_spec["correct"]
    score = (ROOT_CAUSE_POINTS if correct else 0) + round(EVIDENCE_POINTS * percent / 100)
    labels = {p["key"]: {"en": p["en"], "zh": p["zh"]} for p in diagnosis_spec["rubric"]}
    detail = {
        "root_cause_correct": correct,
        "root_cause_points": ROOT_CAUSE_POINTS if correct else 0,
        "evidence_percent": percent,
        "evidence_points": round(EVIDENCE_POINTS * percent / 100),
        "points": [{**p.as_dict(), "label": labels[p.key]} for p in points],
    }
    return score, detail

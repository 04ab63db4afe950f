"""How an attempt's score is made, in one place so the page can show the same formula.

score = max(0, round(0.6 × fix + 0.4 × diagnosis − hint costs)), where fix is the
percentage of the lab's checks the submitted fix passed, diagnosis the diagnosis score
(0–100, zero until one is submitted), and hint costs the sum of the hints revealed.
"""

from __future__ import annotations

from django.db.models import Sum

from labs.models import Attempt, HintReveal, LabRun

FIX_WEIGHT = 0.6
DIAGNOSIS_WEIGHT = 0.4
FORMULA = "score = max(0, round(0.6 × fix + 0.4 × diagnosis − hint costs))"


def hint_costs(attempt_id: int) -> int:
    return HintReveal.objects.filter(attempt_id=attempt_id).aggregate(total=Sum("cost"))["total"] or 0


def compute_score(fix_percent: int, diagnosis_score: int | None, hints: int) -> tuple[int, dict]:
    diagnosis = diagnosis_score or 0
    raw = FIX_WEIGHT * fix_percent + DIAGNOSIS_WEIGHT * diagnosis - hints
    score = max(0, round(raw))
    return score, {"fix": fix_percent, "diagnosis": diagnosis, "hints": hints, "score": score, "formula": FORMULA}


def record_fix_result(lab_run_id: int) -> None:
    """Score a graded fix and carry the best score and a pass onto its attempt (inside the grading transaction)."""
    lab_run = LabRun.objects.select_related("attempt").get(pk=lab_run_id)
    attempt = lab_run.attempt
    score, detail = compute_score(lab_run.fix_percent or 0, attempt.diagnosis_score, hint_costs(attempt.pk))
    LabRun.objects.filter(pk=lab_run.pk).update(score=score, score_detail=detail)
    best = max(score, attempt.best_score or 0)
    fields = {"best_score": best}
    if lab_run.passed:
        fields["status"] = Attempt.Status.PASSED
    Attempt.objects.filter(pk=attempt.pk).update(**fields)

"""How a fix is scored and an attempt's score is made, in one place so the page can show the same formula.

fix % counts only the checks that tell a fixed program from the faulty one:

- **display** checks (``loss_finite``, ``counter``) read what the program reported about
  itself. They are shown and never count.
- **distinguishing** checks are those the faulty baseline failed on every seed it was
  validated on (recorded on the version by ``labs.validation``).
- every other check is a **precondition**: failing one scores 0 %, passing adds nothing.
- a check marked ``gate: true`` scores 0 % when it fails, whatever its role.

fix % = 0 if a precondition or a gate fails, else 100 × passed distinguishing / distinguishing.
Before a version is validated, every non-display check counts as distinguishing.

score = max(0, round(0.6 × fix + 0.4 × diagnosis − hint costs)), where diagnosis is the
diagnosis score (0–100, zero until one is submitted) and hint costs the sum of the hints
revealed. :func:`rescore_attempt` is the only writer of the scores of an attempt.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Sum
from django.utils.translation import gettext_noop

from labs.checks import DISPLAY_TYPES
from labs.models import Attempt, HintReveal, LabRun
from labs.signals import attempt_scored

FIX_WEIGHT = 0.6
DIAGNOSIS_WEIGHT = 0.4
# Stored with each score in English; pages show it translated.
FORMULA = gettext_noop("score = max(0, round(0.6 × fix + 0.4 × diagnosis − hint costs))")
DISPLAY, PRECONDITION, DISTINGUISHING = "display", "precondition", "distinguishing"


def counted_checks(checks: list[dict]) -> list[str]:
    """Names of the checks that can count at all (every check but the display-only ones)."""
    return [check["name"] for check in checks if check["type"] not in DISPLAY_TYPES]


def assign_roles(results: list[dict], distinguishing: list[str] | None) -> list[dict]:
    """Each check result with ``counts`` set. ``distinguishing`` None: the version is not validated yet."""
    roles = []
    for result in results:
        if result["type"] in DISPLAY_TYPES:
            counts = DISPLAY
        elif distinguishing is None or result["name"] in distinguishing:
            counts = DISTINGUISHING
        else:
            counts = PRECONDITION
        roles.append({**result, "counts": counts, "gate": bool(result.get("gate")) and counts != DISPLAY})
    return roles


def fix_passed(results: list[dict]) -> bool:
    """A fix passes when every check that counts holds; display checks never decide."""
    return all(r["passed"] for r in results if r["counts"] != DISPLAY)


def fix_percent(results: list[dict]) -> int:
    for r in results:
        if not r["passed"] and (r["counts"] == PRECONDITION or (r["gate"] and r["counts"] != DISPLAY)):
            return 0
    scored = [r for r in results if r["counts"] == DISTINGUISHING]
    if not scored:
        return 100 if fix_passed(results) else 0
    return round(100 * sum(r["passed"] for r in scored) / len(scored))


def hint_costs(attempt_id: int) -> int:
    return HintReveal.objects.filter(attempt_id=attempt_id).aggregate(total=Sum("cost"))["total"] or 0


def compute_score(fix_percent: int, diagnosis_score: int | None, hints: int) -> tuple[int, dict]:
    diagnosis = diagnosis_score or 0
    raw = FIX_WEIGHT * fix_percent + DIAGNOSIS_WEIGHT * diagnosis - hints
    score = max(0, round(raw))
    return score, {"fix": fix_percent, "diagnosis": diagnosis, "hints": hints, "score": score, "formula": FORMULA}


@transaction.atomic
def rescore_attempt(attempt_id: int, reason: str, lab_run_id: int | None = None) -> None:
    """Score every graded fix of the attempt from its fix %, the diagnosis and the hints taken now, then set
    the attempt's best score and, once a fix passed, its status. Grading, a diagnosis and a hint all call
    this; nothing else writes these fields."""
    # The row lock orders concurrent callers (a fix graded while a hint is revealed): each recomputes
    # from what is committed, so the last one leaves the right numbers.
    attempt = Attempt.objects.select_for_update().get(pk=attempt_id)
    hints = hint_costs(attempt_id)
    best = None
    fixes = LabRun.objects.filter(attempt_id=attempt_id, kind=LabRun.Kind.FIX, graded_at__isnull=False)
    for pk, percent, old_score, old_detail in fixes.values_list("pk", "fix_percent", "score", "score_detail"):
        score, detail = compute_score(percent or 0, attempt.diagnosis_score, hints)
        if (score, detail) != (old_score, old_detail):
            LabRun.objects.filter(pk=pk).update(score=score, score_detail=detail)
        best = score if best is None else max(best, score)
    Attempt.objects.filter(pk=attempt_id).update(best_score=best)
    if fixes.filter(passed=True).exists():
        Attempt.mark_passed(attempt_id)
    transaction.on_commit(
        lambda: attempt_scored.send(sender=Attempt, attempt_id=attempt_id, reason=reason, lab_run_id=lab_run_id)
    )

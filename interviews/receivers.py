"""What interviews learns from labs: a graded fix, a diagnosis or a hint on an interview's attempt."""

from __future__ import annotations

from interviews.audit import record
from interviews.models import Event, InterviewItem
from labs.models import Attempt, LabRun


def on_attempt_scored(sender, attempt_id: int, reason: str, lab_run_id: int | None = None, **kwargs) -> None:
    item = InterviewItem.objects.select_related("interview").filter(attempt_id=attempt_id).first()
    if item is None or reason == "hint":  # hints are recorded by the interviewer who released them
        return
    detail: dict = {"reason": reason}
    if reason == "fix" and lab_run_id:
        lab_run = LabRun.objects.filter(pk=lab_run_id).first()
        if lab_run:
            detail.update(lab_run=lab_run.pk, passed=lab_run.passed, fix_percent=lab_run.fix_percent)
    elif reason == "diagnosis":
        attempt = Attempt.objects.get(pk=attempt_id)
        # A version of the diagnosis: the attempt keeps only the latest, the review replays them all.
        detail.update(root_cause=attempt.diagnosis_choice, text=attempt.diagnosis_text, score=attempt.diagnosis_score)
    record(item.interview, Event.Kind.LAB_SCORED, item.interview.candidate, item, **detail)

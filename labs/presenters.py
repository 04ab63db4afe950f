"""The JSON shapes the API and the workspace page share, in the reader's language."""

from __future__ import annotations

import difflib

from django.template.loader import render_to_string
from django.utils.translation import gettext

from core.contentlang import content_language
from labs.checks import localized
from labs.models import Attempt, Lab, LabRun
from labs.progress import stage_text
from labs.run_outcome import run_outcome
from labs.scoring import FORMULA
from labs.services import current_score, original_files
from questions.feedback import feedback_points
from sandbox.dispatch import queue_position
from sandbox.models import Run
from sandbox.services import pause_state


def pick(texts: dict, language: str | None) -> str:
    return texts[content_language(language)]


def diagnosis_feedback(detail: dict, language: str | None) -> list[dict]:
    """A graded diagnosis's rubric points as the shared feedback list shows them (``questions.feedback``)."""
    points = detail.get("points") or []
    labels = {p["key"]: pick(p["label"], language) if p.get("label") else p["key"] for p in points}
    return feedback_points(points, labels, language)


def lab_payload(lab: Lab, language: str | None) -> dict:
    spec = lab.current.spec
    return {
        "slug": lab.slug,
        "family": lab.family,
        "difficulty": lab.difficulty,
        "title": pick(spec["title"], language),
        "version": lab.current.number,
        "ranks": spec["resources"]["ranks"],
        "gpu": spec["resources"]["gpu"],
    }


def sealed_for(attempt: Attempt | None) -> bool:
    """An interview attempt shows its candidate no scores (they include the diagnosis rubric's verdict);
    the interviewers' pages ask for the payloads with ``sealed=False``."""
    return attempt is not None and attempt.is_interview


def lab_run_payload(lab_run: LabRun, language: str | None, full: bool = True, sealed: bool | None = None) -> dict:
    run = lab_run.run
    data = {
        "id": lab_run.pk,
        "kind": lab_run.kind,
        "status": run.status,
        "outcome": run_outcome(lab_run),
        "created_at": run.created_at,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "finished_at": run.finished_at,
        "exit_codes": run.exit_codes,
        "timed_out": run.timed_out,
        "oom_killed": run.oom_killed,
        "duration_seconds": run.duration_seconds,
        "peak_memory_bytes": run.peak_memory_bytes,
        "error": run.error_message if run.status == Run.Status.ERROR else "",
        "platform_fault": run.status == Run.Status.ERROR,
        "backend": run.backend,
        "toggles": sorted(run.env),
    }
    if full:
        data["queue_position"] = queue_position(run)
        data["paused"] = pause_state(run)
        data["stage"] = stage_text(lab_run, data["queue_position"], data["paused"])
        data["log_truncated"] = run.log_truncated
    if lab_run.kind == LabRun.Kind.FIX:
        data.update(
            passed=lab_run.passed, fix_percent=lab_run.fix_percent, score=lab_run.score,
            score_detail=lab_run.score_detail, checks=[localized(c) for c in lab_run.checks],
            graded=lab_run.graded_at is not None,
        )  # fmt: skip
        if sealed if sealed is not None else sealed_for(lab_run.attempt):
            data.update(score=None, score_detail=None)
    return data


def attempt_payload(attempt: Attempt, language: str | None, sealed: bool | None = None) -> dict:
    attempt.refresh_from_db()
    spec = attempt.version.spec
    revealed = {h.index: h for h in attempt.hint_reveals.all()}
    sealed = sealed_for(attempt) if sealed is None else sealed
    data = {
        "id": attempt.pk,
        "lab": attempt.version.lab.slug,
        "version": attempt.version.number,
        "seed": attempt.seed,
        "status": attempt.status,
        "title": pick(spec["title"], language),
        "briefing": pick(spec["briefing"], language),
        "entry": spec["entry"],
        "files": attempt.files,
        "tools": spec["tools"],
        "hints": [
            {"index": i, "cost": h["cost"], "text": pick(h, language) if i in revealed else None}
            for i, h in enumerate(spec["hints"])
        ],
        "root_causes": [{"key": o["key"], "text": pick(o, language)} for o in spec["diagnosis"]["options"]],
        "diagnosis": {
            "root_cause": attempt.diagnosis_choice,
            "evidence": attempt.diagnosis_text,
            "score": attempt.diagnosis_score,
            "detail": attempt.diagnosis_detail,
            # The point-by-point list every scored answer gets, rendered (and escaped) by the shared template.
            "feedback_html": render_to_string(
                "includes/point_feedback.html",
                {"items": diagnosis_feedback(attempt.diagnosis_detail or {}, language), "testid": "diagnosis-points"},
            )
            if attempt.diagnosis_detail
            else "",
            "draft": attempt.diagnosis_draft,
        },
        "score": current_score(attempt),
        "best_score": attempt.best_score,
        "formula": gettext(FORMULA),
        "interview": attempt.is_interview,
        "closed": attempt.closed_at is not None,
        "sealed": sealed,
    }
    if sealed:
        data["diagnosis"].update(score=None, detail=None, feedback_html="")
        data.update(score=None, best_score=None)
    return data


def files_diff(before: dict[str, str], after: dict[str, str], old: str, new: str) -> list[dict]:
    """A unified diff per changed file of two program folders (path → text), labelled ``old/…`` and ``new/…``."""
    diffs = []
    for name in sorted(set(before) | set(after)):
        lines = difflib.unified_diff(
            before.get(name, "").splitlines(keepends=True),
            after.get(name, "").splitlines(keepends=True),
            f"{old}/{name}",
            f"{new}/{name}",
        )
        text = "".join(lines)
        if text:
            diffs.append({"name": name, "diff": text})
    return diffs


def file_diffs(attempt: Attempt) -> list[dict]:
    return files_diff(original_files(attempt), attempt.files, "original", "yours")


def timeline(attempt: Attempt, language: str | None, sealed: bool | None = None) -> list[dict]:
    """Runs, tool outputs, hints and the diagnosis, oldest first."""
    sealed = sealed_for(attempt) if sealed is None else sealed
    items = []
    for lab_run in attempt.lab_runs.select_related("run"):
        payload = lab_run_payload(lab_run, language, False, sealed=sealed)
        items.append({"at": lab_run.run.created_at, "type": lab_run.kind, **payload})
        for diagnostic in lab_run.run.diagnostics.all():
            items.append(
                {"at": diagnostic.created_at, "type": "tool", "tool": diagnostic.kind, "run": lab_run.pk,
                 "status": diagnostic.status, "output": diagnostic.output}
            )  # fmt: skip
    hints = attempt.version.spec["hints"]
    for reveal in attempt.hint_reveals.all():
        items.append({"at": reveal.created_at, "type": "hint", "index": reveal.index, "cost": reveal.cost,
                      "text": pick(hints[reveal.index], language)})  # fmt: skip
    if attempt.diagnosed_at:
        items.append({"at": attempt.diagnosed_at, "type": "diagnosis", "root_cause": attempt.diagnosis_choice,
                      "score": None if sealed else attempt.diagnosis_score})  # fmt: skip
    return sorted(items, key=lambda item: item["at"])

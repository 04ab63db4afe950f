"""The candidate's session replayed: one list of frames in time order for the review page.

A frame is one thing that happened: a draft autosaved, a lab run (with the code diff since the
attempt's previous run), a tool's output, a diagnosis version, a hint, a note, added time, or a
step of the session (started, item opened, answered, finished). The page walks the frames and
rebuilds the state at any moment from them, so nothing here needs to know about the slider.
"""

from __future__ import annotations

from datetime import datetime

from django.utils.translation import gettext as _

from interviews.models import Event, Interview, InterviewItem, ItemKind
from interviews.scoring import item_title
from labs.models import LabRun
from labs.presenters import files_diff, lab_run_payload, pick
from labs.services import hidden_files, program_for
from questions.models import current_lang

# Ties (the same instant) replay in this order: what the candidate did before what it caused.
ORDER = {"event": 0, "draft": 1, "run": 2, "fix": 2, "tool": 3, "diagnosis": 4, "hint": 5, "note": 5, "time": 5}
SESSION_EVENTS = (
    Event.Kind.STARTED,
    Event.Kind.ITEM_OPENED,
    Event.Kind.ITEM_ANSWERED,
    Event.Kind.ITEM_TIME_UP,
    Event.Kind.FINISHED,
)


def _number(item: InterviewItem | None) -> int | None:
    return None if item is None else item.position + 1


def _lab_frames(item: InterviewItem, lang: str) -> list[dict]:
    attempt = item.attempt
    if attempt is None:
        return []
    spec = attempt.version.spec
    # A graded run also carries the lab's hidden grading files: they are not the candidate's work.
    hidden = set(hidden_files(spec, attempt.seed))
    previous, previous_label = program_for(attempt.version, attempt.seed), "original"
    frames = []
    runs = attempt.lab_runs.select_related("run").prefetch_related("run__diagnostics").order_by("run__created_at", "pk")
    for lab_run in runs:
        run = lab_run.run
        is_fix = lab_run.kind == LabRun.Kind.FIX
        files = {name: text for name, text in run.files.items() if not (is_fix and name in hidden)}
        if is_fix:
            files = {**{name: previous[name] for name in hidden if name in previous}, **files}
        label = f"run{lab_run.pk}"
        payload = lab_run_payload(lab_run, lang, full=False, sealed=False)
        frames.append({
            "at": run.created_at, "type": lab_run.kind, "item": _number(item), "run": payload,
            "diff": files_diff(previous, files, previous_label, label),
            "diff_from": previous_label, "flags": [{"text": pick(f, lang), "pattern": f.get("pattern", "")}
                                                   for f in lab_run.flags] if is_fix else [],
            "summary": (_("Fix %(id)s submitted on item %(n)s: %(outcome)s") if is_fix
                        else _("Run %(id)s on item %(n)s: %(outcome)s"))
            % {"id": lab_run.pk, "n": _number(item), "outcome": payload["outcome"]},
        })  # fmt: skip
        previous, previous_label = files, label
        for diagnostic in run.diagnostics.all():
            frames.append({
                "at": diagnostic.created_at, "type": "tool", "item": _number(item), "tool": diagnostic.kind,
                "run_id": lab_run.pk, "status": diagnostic.status, "output": diagnostic.output,
                "summary": _("Tool %(tool)s on run %(id)s (%(status)s)")
                % {"tool": diagnostic.kind, "id": lab_run.pk, "status": diagnostic.status},
            })  # fmt: skip
    return frames


def _event_frame(event: Event, lang: str) -> dict | None:
    item, detail = event.item, event.detail
    base = {"at": event.created_at, "item": _number(item), "actor": event.actor.username if event.actor else None}
    if event.kind == Event.Kind.LAB_SCORED:
        if detail.get("reason") != "diagnosis" or item is None:
            return None  # a graded fix is already its run's frame
        options = {o["key"]: pick(o, lang) for o in item.lab_version.spec["diagnosis"]["options"]}
        cause, score = detail.get("root_cause", ""), detail.get("score")
        summary = _("Diagnosis on item %(n)s: %(cause)s (score %(score)s/100)") % {
            "n": _number(item), "cause": cause, "score": score,
        }  # fmt: skip
        return {**base, "type": "diagnosis", "root_cause": cause, "root_cause_text": options.get(cause, cause),
                "text": detail.get("text", ""), "score": score, "summary": summary}  # fmt: skip
    if event.kind == Event.Kind.HINT_RELEASED:
        text = detail.get("text", "")
        if not text and "lab_hint" in detail and item is not None and item.lab_version:
            text = pick(item.lab_version.spec["hints"][detail["lab_hint"]], lang)
        return {**base, "type": "hint", "text": text, "cost": detail.get("cost"),
                "summary": _("Hint released on item %(n)s") % {"n": _number(item)}}  # fmt: skip
    if event.kind == Event.Kind.NOTE_SENT:
        return {**base, "type": "note", "text": detail.get("text", ""), "summary": _("Note sent to the candidate")}
    if event.kind == Event.Kind.TIME_ADDED:
        minutes = (detail.get("seconds") or 0) // 60
        summary = (
            _("%(minutes)s minutes added to item %(n)s") % {"minutes": minutes, "n": _number(item)}
            if item
            else _("%(minutes)s minutes added to the interview") % {"minutes": minutes}
        )
        return {**base, "type": "time", "seconds": detail.get("seconds"), "summary": summary}
    if event.kind in SESSION_EVENTS:
        summary = str(event.get_kind_display())
        if item is not None:
            summary = _("%(what)s: item %(n)s") % {"what": summary, "n": _number(item)}
        return {**base, "type": "event", "kind": event.kind, "summary": summary}
    return None


def frames(interview: Interview, lang: str | None = None) -> list[dict]:
    """Everything the candidate did and was sent, oldest first; ``at`` as ISO 8601."""
    lang = lang or current_lang()
    items = list(interview.items.select_related("question", "lab", "lab_version", "attempt__version"))
    found: list[dict] = []
    for item in items:
        if item.kind == ItemKind.QUESTION:
            for snapshot in item.snapshots.all():
                found.append({
                    "at": snapshot.created_at, "type": "draft", "item": _number(item), "text": snapshot.text,
                    "summary": _("Draft of item %(n)s: %(count)s characters")
                    % {"n": _number(item), "count": len(snapshot.text)},
                })  # fmt: skip
        else:
            found.extend(_lab_frames(item, lang))
    for event in interview.events.select_related("item__lab_version", "actor"):
        frame = _event_frame(event, lang)
        if frame is not None:
            found.append(frame)
    found.sort(key=lambda f: (f["at"], ORDER.get(f["type"], 9)))
    for index, frame in enumerate(found):
        at: datetime = frame["at"]
        frame.update(index=index, at=at.isoformat())
    return found


def playback(interview: Interview, lang: str | None = None) -> dict:
    """What the review page embeds: the items (to lay out the panel) and the frames."""
    lang = lang or current_lang()
    items = [
        {"position": item.position + 1, "kind": item.kind, "title": item_title(item, lang)}
        for item in interview.items.select_related("question", "lab", "lab_version")
    ]
    return {"items": items, "frames": frames(interview, lang)}

"""The panel's combined scorecard: one builder for the page, the JSON and CSV exports and the API.

Only submitted scorecards are in it, and an interviewer sees it only once they submitted their own
(admins always), so no one's scores lean on a colleague's before they committed to theirs.
"""

from __future__ import annotations

import csv
import io
from statistics import mean

from django.utils.translation import gettext as _

from interviews.audit import record
from interviews.models import Event, Interview, InterviewItem, ItemKind, PointScore, Scorecard
from interviews.scoring import item_title, point_label
from questions.models import current_lang

# Two interviewers this far apart on an item (0–4 scale) should talk before deciding.
DISAGREEMENT = 2


def combined_visible(interview: Interview, user) -> bool:
    if user.is_staff:
        return True
    return Scorecard.objects.filter(interview=interview, interviewer=user, submitted_at__isnull=False).exists()


def item_topic(item: InterviewItem, lang: str) -> dict:
    """A question's topic; a lab's first linked question's topic, or else the lab's family."""
    if item.kind == ItemKind.QUESTION:
        topic = item.question.topic
        return {"key": f"topic:{topic.slug}", "name": topic.localized("name", lang)}
    linked = item.lab.questions.select_related("topic").order_by("pk").first()
    if linked is not None:
        return {"key": f"topic:{linked.topic.slug}", "name": linked.topic.localized("name", lang)}
    return {"key": f"family:{item.lab.family}", "name": str(item.lab.get_family_display())}


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(mean(values), 2) if values else None


def build_scorecard(interview: Interview, lang: str | None = None) -> dict:
    lang = lang or current_lang()
    cards = list(
        Scorecard.objects.filter(interview=interview, submitted_at__isnull=False)
        .select_related("interviewer")
        .order_by("submitted_at", "pk")
    )
    names = {card.pk: card.interviewer.username for card in cards}
    points = list(
        PointScore.objects.filter(scorecard__in=cards).select_related("item").order_by("item__position", "pk")
    )
    items = list(
        interview.items.select_related("question__topic", "lab", "lab_version").prefetch_related("question__rubric")
    )

    item_rows, topics, overrides = [], {}, []
    for item in items:
        mine = [p for p in points if p.item_id == item.pk]
        keys = list(dict.fromkeys(p.key for p in mine))
        point_rows = []
        for key in keys:
            scores = {names[p.scorecard_id]: p.score for p in mine if p.key == key}
            notes = {names[p.scorecard_id]: p.note for p in mine if p.key == key and p.note}
            auto = next((p.auto for p in mine if p.key == key), None)
            point_rows.append({"key": key, "label": point_label(item, key, lang), "auto": auto, "scores": scores,
                               "mean": _mean(list(scores.values())), "notes": notes})  # fmt: skip
        by_interviewer = {names[card.pk]: _mean([p.score for p in mine if p.scorecard_id == card.pk]) for card in cards}
        given = [v for v in by_interviewer.values() if v is not None]
        spread = round(max(given) - min(given), 2) if len(given) >= 2 else 0
        topic = item_topic(item, lang)
        row = {
            "position": item.position + 1,
            "kind": item.kind,
            "title": item_title(item, lang),
            "topic": topic["name"],
            "points": point_rows,
            "scores": by_interviewer,
            "mean": _mean(given),
            "spread": spread,
            "disagreement": spread >= DISAGREEMENT,
        }
        item_rows.append(row)
        bucket = topics.setdefault(topic["key"], {"topic": topic["name"], "items": [], "rows": []})
        bucket["items"].append(row["position"])
        bucket["rows"].append(by_interviewer)
        for p in mine:
            if p.overridden:
                overrides.append({
                    "interviewer": names[p.scorecard_id], "item": item.position + 1, "title": row["title"],
                    "key": p.key, "auto": p.auto, "score": p.score, "reason": p.override_reason,
                    "at": p.overridden_at.isoformat() if p.overridden_at else None,
                })  # fmt: skip

    topic_rows = []
    for bucket in topics.values():
        # Each item weighs the same within its topic, however many rubric points it has.
        scores = {name: _mean([row.get(name) for row in bucket["rows"]]) for name in names.values()}
        topic_rows.append({"topic": bucket["topic"], "items": bucket["items"], "scores": scores,
                           "mean": _mean(list(scores.values()))})  # fmt: skip

    return {
        "interview": {
            "id": interview.pk,
            "title": interview.title,
            "candidate": interview.candidate_name,
            "status": interview.status,
            "finished_at": interview.finished_at.isoformat() if interview.finished_at else None,
        },
        "scale": {"min": 0, "max": 4, "disagreement": DISAGREEMENT},
        "interviewers": [
            {
                "username": card.interviewer.username,
                "recommendation": card.recommendation,
                "recommendation_label": str(card.get_recommendation_display()),
                "summary": card.summary,
                "submitted_at": card.submitted_at.isoformat(),
                "mean": _mean([p.score for p in points if p.scorecard_id == card.pk]),
            }
            for card in cards
        ],
        "items": item_rows,
        "topics": topic_rows,
        "disagreements": [row["position"] for row in item_rows if row["disagreement"]],
        "overrides": overrides,
    }


def to_csv(data: dict) -> str:
    """One row per score: each point, then each item's and each topic's mean, then the recommendations."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["record", "item", "title", "topic", "point", "interviewer", "score", "auto", "text"])
    for row in data["items"]:
        for point in row["points"]:
            for name, score in point["scores"].items():
                writer.writerow(["point", row["position"], row["title"], row["topic"], point["key"], name, score,
                                 point["auto"], point["notes"].get(name, "")])  # fmt: skip
        for name, score in row["scores"].items():
            writer.writerow(["item", row["position"], row["title"], row["topic"], "", name, score, "",
                             _("disagreement") if row["disagreement"] else ""])  # fmt: skip
        writer.writerow(["item", row["position"], row["title"], row["topic"], "", "mean", row["mean"], "", ""])
    for row in data["topics"]:
        for name, score in row["scores"].items():
            writer.writerow(["topic", "", "", row["topic"], "", name, score, "", ""])
        writer.writerow(["topic", "", "", row["topic"], "", "mean", row["mean"], "", ""])
    for person in data["interviewers"]:
        writer.writerow(["recommendation", "", "", "", "", person["username"], person["recommendation"], "",
                         person["summary"]])  # fmt: skip
    for o in data["overrides"]:
        writer.writerow(["override", o["item"], o["title"], "", o["key"], o["interviewer"], o["score"], o["auto"],
                         o["reason"]])  # fmt: skip
    return out.getvalue()


def export(interview: Interview, user, fmt: str, lang: str | None = None) -> tuple[dict, str | None]:
    """The combined scorecard for download (``fmt`` json, csv or api); recorded in the audit trail."""
    data = build_scorecard(interview, lang)
    record(interview, Event.Kind.EXPORTED, user, format=fmt, scorecards=len(data["interviewers"]))
    return data, to_csv(data) if fmt == "csv" else None

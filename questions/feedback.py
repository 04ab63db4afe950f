"""Scored rubric points as every feedback page shows them: the practice answer, a lab's diagnosis, and the
interviewer's scorecard all render the same breakdown (``templates/includes/point_feedback.html``).

Per point: its state (found, partly found, missed, contradicted), the concepts found, listed and missing,
the sentences that earned the found ones, the terms the answer denied, and for a misconception the
sentence that stated it with why it is wrong, in the page's language."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.contentlang import content_language
from questions.concepts import point_report

# The CSS class of each state (static/css/faultline.css): the practice page's names since before the states.
STATE_CLASS = {"found": "covered", "partly found": "partial", "missed": "missed", "contradicted": "contradicted"}


def feedback_points(coverage: Iterable[dict], labels: Mapping[str, str], language: str | None) -> list[dict]:
    """``coverage``: ``PointCoverage.as_dict()`` rows as answers and diagnoses store them; ``labels``: the
    text shown for each point key (a point without one shows its key); ``language``: any Django code."""
    lang = content_language(language)
    items = []
    for point in coverage:
        report = point_report(point, labels.get(point["key"], point["key"]))
        items.append({
            **report,
            "css": STATE_CLASS[report["state"]],
            "percent": round(100 * float(point.get("fraction", 0))),
            "wrong": [
                {"sentence": w.get("sentence", ""), "why": w.get("zh" if lang == "zh" else "en") or w.get("en", "")}
                for w in point.get("contradicted") or []
            ],
        })  # fmt: skip
    return items

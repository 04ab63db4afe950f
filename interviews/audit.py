"""The audit trail: one row per thing that happened in an interview, with who and when."""

from __future__ import annotations

from interviews.models import Event, Interview, InterviewItem


def record(interview: Interview, kind: str, actor=None, item: InterviewItem | None = None, **detail) -> Event:
    return Event.objects.create(interview=interview, kind=kind, actor=actor, item=item, detail=detail)

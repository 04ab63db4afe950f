"""The authoring audit trail: who created, edited, validated, published, rolled back, imported or exported what."""

from __future__ import annotations

from authoring.models import AuthoringEvent


def record(kind: str, subject: str, slug: str, actor, **detail) -> AuthoringEvent:
    return AuthoringEvent.objects.create(kind=kind, subject=subject, slug=slug, actor=actor, detail=detail)


def events_for(subject: str, slug: str, limit: int = 50) -> list[AuthoringEvent]:
    return list(AuthoringEvent.objects.filter(subject=subject, slug=slug).select_related("actor")[:limit])

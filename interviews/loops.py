"""Interview templates ("loops"): an ordered list of bank questions and labs, made and copied in the browser."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from interviews.errors import InterviewRefused
from interviews.models import InterviewTemplate, ItemKind, TemplateItem
from labs.models import Lab
from questions.models import Question

MAX_ITEMS = 20
MAX_DURATION_MINUTES = 8 * 60
MAX_TIME_BOX_MINUTES = 8 * 60


@dataclass(frozen=True)
class ItemSpec:
    """One item as a form or the API names it: ``ref`` is a question or lab slug."""

    kind: str
    ref: str
    time_box_minutes: int | None = None


def resolve_items(items: list[ItemSpec], require_published: bool = True) -> list[dict]:
    """Check every item and look its question or lab up; InterviewRefused names the first bad one.
    A template may name a lab that has not passed validation yet (a fresh server validates in the
    background); an interview may not, since its lab item is pinned to a validated version."""
    if not items:
        raise InterviewRefused("add at least one question or lab", "items")
    if len(items) > MAX_ITEMS:
        raise InterviewRefused(f"at most {MAX_ITEMS} items", "items")
    resolved = []
    for n, item in enumerate(items, start=1):
        where = f"item {n}"
        box = item.time_box_minutes
        if box is not None and not 1 <= box <= MAX_TIME_BOX_MINUTES:
            raise InterviewRefused(f"{where}: a time box is 1–{MAX_TIME_BOX_MINUTES} minutes", "items")
        if item.kind == ItemKind.QUESTION:
            question = Question.objects.filter(slug=item.ref, retired=False).first()
            if question is None:
                raise InterviewRefused(f"{where}: no question {item.ref!r} in the bank", "items")
            resolved.append({"kind": item.kind, "question": question, "lab": None, "time_box_minutes": box})
        elif item.kind == ItemKind.LAB:
            lab = Lab.objects.filter(slug=item.ref, retired=False).select_related("current").first()
            if lab is None:
                raise InterviewRefused(f"{where}: no lab {item.ref!r} in the catalog", "items")
            if require_published and not lab.published:
                raise InterviewRefused(f"{where}: the lab {item.ref!r} has not passed validation yet", "items")
            resolved.append({"kind": item.kind, "question": None, "lab": lab, "time_box_minutes": box})
        else:
            raise InterviewRefused(f"{where}: kind must be question or lab, not {item.kind!r}", "items")
    return resolved


def _check_header(title: str, duration_minutes: int) -> str:
    title = (title or "").strip()
    if not title:
        raise InterviewRefused("give the template a title", "title")
    if len(title) > 200:
        raise InterviewRefused("a title is at most 200 characters", "title")
    if not 5 <= duration_minutes <= MAX_DURATION_MINUTES:
        raise InterviewRefused(f"the duration is 5–{MAX_DURATION_MINUTES} minutes", "duration_minutes")
    return title


@transaction.atomic
def save_template(owner, *, title: str, instructions: str, duration_minutes: int, items: list[ItemSpec],
                  template: InterviewTemplate | None = None) -> InterviewTemplate:  # fmt: skip
    """Create a template, or replace an existing one's fields and items."""
    title = _check_header(title, duration_minutes)
    resolved = resolve_items(items, require_published=False)
    if template is None:
        template = InterviewTemplate(owner=owner)
    template.title, template.instructions, template.duration_minutes = title, instructions or "", duration_minutes
    template.save()
    template.items.all().delete()
    TemplateItem.objects.bulk_create(
        TemplateItem(template=template, position=i, **fields) for i, fields in enumerate(resolved)
    )
    return template


@transaction.atomic
def copy_template(user, template: InterviewTemplate) -> InterviewTemplate:
    copy = InterviewTemplate.objects.create(
        owner=user, title=f"{template.title} (copy)"[:200], instructions=template.instructions,
        duration_minutes=template.duration_minutes, copied_from=template,
    )  # fmt: skip
    TemplateItem.objects.bulk_create(
        TemplateItem(template=copy, position=item.position, kind=item.kind, question=item.question, lab=item.lab,
                     time_box_minutes=item.time_box_minutes)
        for item in template.items.all()
    )  # fmt: skip
    return copy


def template_item_specs(template: InterviewTemplate) -> list[ItemSpec]:
    return [
        ItemSpec(item.kind, (item.question or item.lab).slug, item.time_box_minutes)
        for item in template.items.select_related("question", "lab")
    ]

"""Interview templates ("loops"): an ordered list of bank questions and labs, made and copied in the browser."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext as _

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
        raise InterviewRefused(_("add at least one question or lab"), "items")
    if len(items) > MAX_ITEMS:
        raise InterviewRefused(_("at most %(n)d items") % {"n": MAX_ITEMS}, "items")
    resolved = []
    for n, item in enumerate(items, start=1):
        where = _("item %(n)d") % {"n": n}
        box = item.time_box_minutes
        if box is not None and not 1 <= box <= MAX_TIME_BOX_MINUTES:
            raise InterviewRefused(
                _("%(where)s: a time box is 1–%(max)d minutes") % {"where": where, "max": MAX_TIME_BOX_MINUTES}, "items"
            )
        if item.kind == ItemKind.QUESTION:
            question = Question.objects.filter(slug=item.ref, retired=False).first()
            if question is None:
                raise InterviewRefused(
                    _("%(where)s: no question %(ref)r in the bank") % {"where": where, "ref": item.ref}, "items"
                )
            resolved.append({"kind": item.kind, "question": question, "lab": None, "time_box_minutes": box})
        elif item.kind == ItemKind.LAB:
            lab = Lab.objects.filter(slug=item.ref, retired=False).select_related("current").first()
            if lab is None:
                raise InterviewRefused(
                    _("%(where)s: no lab %(ref)r in the catalog") % {"where": where, "ref": item.ref}, "items"
                )
            if require_published and not lab.published:
                raise InterviewRefused(
                    _("%(where)s: the lab %(ref)r has not passed validation yet") % {"where": where, "ref": item.ref},
                    "items",
                )
            resolved.append({"kind": item.kind, "question": None, "lab": lab, "time_box_minutes": box})
        else:
            raise InterviewRefused(
                _("%(where)s: kind must be question or lab, not %(kind)r") % {"where": where, "kind": item.kind},
                "items",
            )
    return resolved


def _check_header(title: str, duration_minutes: int) -> str:
    title = (title or "").strip()
    if not title:
        raise InterviewRefused(_("give the template a title"), "title")
    if len(title) > 200:
        raise InterviewRefused(_("a title is at most %(n)d characters") % {"n": 200}, "title")
    if not 5 <= duration_minutes <= MAX_DURATION_MINUTES:
        raise InterviewRefused(
            _("the duration is %(low)d–%(high)d minutes") % {"low": 5, "high": MAX_DURATION_MINUTES}, "duration_minutes"
        )
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

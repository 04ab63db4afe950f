"""Import the lab catalog: check every folder first, then write everything in one transaction.

A changed folder becomes a new version; attempts keep the version they started on.
Candidates get a version only once it has been validated (``validatelab``), so an
edit never reaches them unchecked. A folder that disappeared retires its lab, unless the lab
was made in the browser (it never had a folder).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.db.models import Max

from labs.models import Lab, LabVersion
from labs.spec import CATALOG_DIR, LabCatalogError, LabSpec, LabSpecError, load_catalog
from questions.models import Question


@dataclass
class LoadReport:
    created: list[str] = field(default_factory=list)
    new_versions: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)


def load_labs(root: Path = CATALOG_DIR) -> LoadReport:
    specs = load_catalog(root)
    slugs = {slug for spec in specs for slug in spec.questions}
    known = dict(Question.objects.filter(slug__in=slugs).values_list("slug", "pk"))
    errors = [
        LabSpecError(Path(spec.path) / "lab.yaml", "questions", f"{slug!r} is not a question in the bank")
        for spec in specs
        for slug in spec.questions
        if slug not in known
    ]
    if errors:
        raise LabCatalogError(errors)
    report = LoadReport()
    with transaction.atomic():
        for spec in specs:
            lab, created = Lab.objects.update_or_create(
                slug=spec.slug,
                defaults={
                    "family": spec.family, "difficulty": spec.difficulty, "title_en": spec.title["en"],
                    "title_zh": spec.title["zh"], "retired": False, "origin": Lab.Origin.CATALOG,
                },
            )  # fmt: skip
            lab.questions.set([known[slug] for slug in spec.questions])
            digest = spec.content_hash()
            if lab.versions.filter(content_hash=digest).exists():
                report.unchanged.append(spec.slug)
                continue
            number = (lab.versions.aggregate(n=Max("number"))["n"] or 0) + 1
            LabVersion.objects.create(lab=lab, number=number, content_hash=digest, spec=spec.as_json())
            (report.created if created else report.new_versions).append(spec.slug)
        gone = Lab.objects.filter(retired=False, origin=Lab.Origin.CATALOG).exclude(slug__in=[s.slug for s in specs])
        report.retired = sorted(gone.values_list("slug", flat=True))
        gone.update(retired=True)
        transaction.on_commit(refresh_question_links)
    return report


def unknown_questions(spec: LabSpec) -> list[str]:
    """The question slugs a lab names that are not in the bank (loadlabs refuses such a lab)."""
    known = set(Question.objects.filter(slug__in=spec.questions).values_list("slug", flat=True))
    return [slug for slug in spec.questions if slug not in known]


@transaction.atomic
def add_version(spec: LabSpec, origin: str = Lab.Origin.BROWSER) -> tuple[LabVersion, bool]:
    """The version holding exactly ``spec`` (made when new, its lab too); True when it was made now.
    Nothing is published: candidates keep the current version until ``publish_version``."""
    lab, _ = Lab.objects.get_or_create(
        slug=spec.slug,
        defaults={
            "family": spec.family, "difficulty": spec.difficulty, "title_en": spec.title["en"],
            "title_zh": spec.title["zh"], "origin": origin,
        },
    )  # fmt: skip
    lab = Lab.objects.select_for_update().get(pk=lab.pk)
    digest = spec.content_hash()
    existing = lab.versions.filter(content_hash=digest).first()
    if existing:
        return existing, False
    number = (lab.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    version = LabVersion.objects.create(lab=lab, number=number, content_hash=digest, spec=spec.as_json(), origin=origin)
    return version, True


@transaction.atomic
def publish_version(version: LabVersion) -> bool:
    """Make a validated version the one new attempts get (running attempts keep theirs), with the lab's
    title, family and questions taken from it. A version older than the current one goes through
    ``Lab.make_current`` instead. True when it became current."""
    if version.validated_at is None:
        return False
    spec = version.spec
    Lab.objects.filter(pk=version.lab_id).update(
        family=spec["family"], difficulty=spec["difficulty"], title_en=spec["title"]["en"],
        title_zh=spec["title"]["zh"], retired=False,
    )  # fmt: skip
    if not Lab.publish(version):
        return False
    version.lab.questions.set(Question.objects.filter(slug__in=spec["questions"]))
    transaction.on_commit(refresh_question_links)
    return True


def refresh_question_links() -> None:
    """Questions point to the published labs that practise them (the bank's "has a lab" filter)."""
    from labs.services import published_labs

    links: dict[int, list[str]] = {}
    for lab in published_labs().prefetch_related("questions"):
        for question in lab.questions.all():
            links.setdefault(question.pk, []).append(lab.slug)
    with transaction.atomic():
        Question.objects.exclude(pk__in=links).filter(has_lab=True).update(has_lab=False, related_labs=[])
        for pk, slugs in links.items():
            Question.objects.filter(pk=pk).update(has_lab=True, related_labs=sorted(slugs))


def latest_version(lab: Lab) -> LabVersion | None:
    return lab.versions.order_by("-number").first()

"""Author pages for labs: the list, drafts and their editor, preview, validation, versions, export.

Thin views over :mod:`authoring.lab_drafts` and :mod:`authoring.lab_publishing`; authors and staff only.
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from authoring import lab_drafts, lab_publishing
from authoring.audit import events_for
from authoring.lab_drafts import DraftInvalid, DraftRefused
from authoring.lab_zip import MAX_ZIP_BYTES
from authoring.models import AuthoringEvent, LabDraft, ValidationJob
from core.roles import Role, role_required
from labs.models import Lab, LabVersion

author_only = role_required(Role.AUTHOR)


def _draft(pk: int) -> LabDraft:
    return get_object_or_404(lab_drafts.live_drafts().select_related("lab", "updated_by", "based_on"), pk=pk)


def _version(slug: str, number: int) -> LabVersion:
    return get_object_or_404(LabVersion.objects.select_related("lab"), lab__slug=slug, number=number)


@author_only
def index(request: HttpRequest) -> HttpResponse:
    drafts = lab_drafts.live_drafts().select_related("updated_by")
    labs = Lab.objects.select_related("current").prefetch_related(Prefetch("drafts", queryset=drafts, to_attr="live"))
    last_jobs = {}
    for job in ValidationJob.objects.select_related("requested_by", "version").order_by("-created_at"):
        last_jobs.setdefault(job.version.lab_id, job)
    rows = [{"lab": lab, "drafts": lab.live, "job": last_jobs.get(lab.pk)} for lab in labs]
    return render(
        request,
        "authoring/labs/index.html",
        {
            "rows": rows,
            "new_drafts": drafts.filter(lab__isnull=True),
            "copyable": [lab for lab in labs if lab.current_id or lab.versions.exists()],
            "max_zip_mb": MAX_ZIP_BYTES // (1024 * 1024),
        },
    )


@author_only
@require_POST
def new_draft(request: HttpRequest) -> HttpResponse:
    source = request.POST.get("source")
    try:
        if source == "scratch":
            draft = lab_drafts.create_from_scratch(request.user, request.POST.get("slug", ""))
        elif source == "copy":
            lab = get_object_or_404(Lab, slug=request.POST.get("lab", ""))
            version = lab.current or lab.versions.order_by("-number").first()
            if version is None:
                raise DraftRefused(_("this lab has no version to copy"))
            draft = lab_drafts.create_from_version(request.user, version)
        elif source == "zip":
            upload = request.FILES.get("zip")
            if upload is None:
                raise DraftRefused(_("zip: choose a zip file of a lab folder"))
            if upload.size > MAX_ZIP_BYTES:
                raise DraftRefused(
                    _("zip: the file is larger than %(mb)d MiB") % {"mb": MAX_ZIP_BYTES // (1024 * 1024)}
                )
            draft = lab_drafts.create_from_zip(request.user, upload.read(), upload.name)
        else:
            raise DraftRefused(_("choose how to start the draft"))
    except DraftRefused as exc:
        messages.error(request, str(exc))
        return redirect("authoring:labs")
    messages.success(request, _("Draft created."))
    return redirect("authoring:lab-draft", pk=draft.pk)


@author_only
def lab_page(request: HttpRequest, slug: str) -> HttpResponse:
    lab = get_object_or_404(Lab.objects.select_related("current"), slug=slug)
    return render(
        request,
        "authoring/labs/lab.html",
        {
            "lab": lab,
            "versions": lab_publishing.version_rows(lab),
            "drafts": lab_drafts.live_drafts().filter(lab=lab).select_related("updated_by"),
            "jobs": ValidationJob.objects.filter(version__lab=lab).select_related("requested_by", "version")[:20],
            "events": events_for(AuthoringEvent.Subject.LAB, lab.slug),
            "min_seeds": lab_publishing.MIN_PUBLISH_SEEDS,
        },
    )


@author_only
@require_POST
def version_draft(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    draft = lab_drafts.create_from_version(request.user, _version(slug, number))
    return redirect("authoring:lab-draft", pk=draft.pk)


@author_only
def version_diff(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = _version(slug, number)
    previous, diff = lab_publishing.version_diff(version)
    return render(
        request,
        "authoring/labs/diff.html",
        {"lab": version.lab, "version": version, "previous": previous, "diff": diff},
    )


@author_only
def version_export(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = _version(slug, number)
    response = HttpResponse(lab_publishing.export_version(version, request.user), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{slug}-v{number}.zip"'
    return response


@author_only
@require_POST
def version_publish(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    try:
        lab_publishing.publish(_version(slug, number), request.user)
    except DraftRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Version %(number)d is published: new attempts get it.") % {"number": number})
    return redirect("authoring:lab", slug=slug)


@author_only
@require_POST
def version_rollback(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    expected = request.POST.get("expected_current") or None
    try:
        lab_publishing.roll_back(_version(slug, number), request.user, int(expected) if expected else None)
    except (DraftRefused, ValueError) as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Rolled back: version %(number)d is published again.") % {"number": number})
    return redirect("authoring:lab", slug=slug)


@author_only
def draft_editor(request: HttpRequest, pk: int) -> HttpResponse:
    draft = _draft(pk)
    return render(
        request,
        "authoring/labs/editor.html",
        {
            "draft": draft,
            "payload": draft_payload(draft),
            "ui": editor_strings(),
            "problems": [p.as_dict() for p in lab_drafts.check(draft.slug, draft.files)],
            "jobs": draft.validations.select_related("version", "requested_by")[:5],
            "max_seeds": lab_publishing.MAX_SEEDS,
            "max_seed": lab_publishing.MAX_SEED,
        },
    )


def draft_payload(draft: LabDraft) -> dict:
    return {
        "id": draft.pk,
        "slug": draft.slug,
        "files": draft.files,
        "revision": draft.revision,
        "updated_by": draft.updated_by.username,
        "updated_at": draft.updated_at.isoformat(),
        "api": reverse("authoring:api-lab-draft", args=[draft.pk]),
        "check": reverse("authoring:api-lab-draft-check", args=[draft.pk]),
    }


def editor_strings() -> dict[str, str]:
    """Text the editor script shows; {name} marks a value the script fills in."""
    return {
        "unsaved": _("unsaved changes"),
        "saved": _("saved (revision {revision})"),
        "checking": _("checking…"),
        "ok": _("loadlabs accepts this folder"),
        "problems": _("{count} problem(s)"),
        "line": _("line {line}"),
        "new_path": _("Path of the new file (program/…, solution/…, hidden/…, bad_fixes/<name>/…, grader.py)"),
        "rename_to": _("New path for {path}"),
        "confirm_delete": _("Delete {path}?"),
        "confirm_leave": _("You have unsaved changes."),
        "exists": _("{path}: a file with this name exists already"),
    }


def _seed_refused(request: HttpRequest, draft: LabDraft, text: str | None, exc: DraftRefused) -> HttpResponse:
    """The preview page with the seed field's error and nothing previewed: 400."""
    context = {"draft": draft, "seed": text or "", "seed_error": str(exc), "max_seed": lab_publishing.MAX_SEED}
    return render(request, "authoring/labs/preview.html", context, status=400)


@author_only
def draft_preview(request: HttpRequest, pk: int) -> HttpResponse:
    draft = _draft(pk)
    try:
        seed = lab_publishing.parse_seed(request.GET.get("seed"))
    except DraftRefused as exc:
        return _seed_refused(request, draft, request.GET.get("seed"), exc)
    context = {"draft": draft, "seed": seed, "max_seed": lab_publishing.MAX_SEED}
    try:
        data = lab_publishing.preview(draft, seed, get_language())
        # render_markdown sanitises with nh3, so the result is safe to insert as HTML.
        context.update(preview=data, briefing_html=mark_safe(data["briefing_html"]))
    except DraftInvalid as exc:
        context["problems"] = exc.problems
    return render(request, "authoring/labs/preview.html", context)


@author_only
@require_POST
def draft_preview_start(request: HttpRequest, pk: int) -> HttpResponse:
    draft = _draft(pk)
    try:
        seed = lab_publishing.parse_seed(request.POST.get("seed"))
    except DraftRefused as exc:
        return _seed_refused(request, draft, request.POST.get("seed"), exc)
    try:
        attempt = lab_publishing.start_preview(draft, seed, request.user)
    except DraftRefused as exc:
        messages.error(request, str(exc))
        return redirect(reverse("authoring:lab-draft-preview", args=[pk]) + f"?seed={seed}")
    return redirect("labs:workspace", pk=attempt.pk)


@author_only
@require_POST
def draft_validate(request: HttpRequest, pk: int) -> HttpResponse:
    draft = _draft(pk)
    try:
        seeds = lab_publishing.parse_seeds(request.POST.get("seeds", ""))
        job = lab_publishing.start_validation(draft, seeds, request.user)
    except DraftRefused as exc:
        messages.error(request, str(exc))
        return redirect("authoring:lab-draft", pk=pk)
    return redirect("authoring:lab-validation", pk=job.pk)


@author_only
@require_POST
def draft_discard(request: HttpRequest, pk: int) -> HttpResponse:
    draft = _draft(pk)
    lab_drafts.discard_draft(draft, request.user)
    messages.success(request, _("Draft discarded."))
    return redirect("authoring:lab", slug=draft.slug) if draft.lab_id else redirect("authoring:labs")


@author_only
def validation_page(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(ValidationJob.objects.select_related("version__lab", "requested_by", "draft"), pk=pk)
    return render(
        request,
        "authoring/labs/validation.html",
        {
            "job": job,
            "payload": lab_publishing.job_payload(job),
            "ui": {
                "pass": _("pass"),
                "fail": _("fail"),
                "ok": _("as expected"),
                "not_ok": _("not as expected"),
                "log": _("log and events"),
                "runs": _("{done} of {total} runs"),
            },  # fmt: skip
            "api": reverse("authoring:api-lab-validation", args=[job.pk]),
            "run_url": reverse("sandbox:run", args=[0]),
        },
    )

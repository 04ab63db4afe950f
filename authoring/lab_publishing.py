"""Versions made from drafts: preview, validation jobs on the authoring queue, publish, roll back, export.

Everything goes through the labs services: the same renderer as a candidate's attempt, the same
validation as ``validatelab`` (run on the worker's own ``authoring`` queue, so drafts never starve
candidates' runs), and guarded updates of ``Lab.current``.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass, field

from celery import current_app
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from authoring.audit import record
from authoring.lab_drafts import DraftRefused, files_of_version, parse_files, version_of
from authoring.lab_zip import write_zip
from authoring.models import AuthoringEvent, LabDraft, LabVersionSource, ValidationJob
from core.contentlang import content_language
from labs.checks import localized
from labs.loader import publish_version
from labs.models import Attempt, Lab, LabRun, LabVersion
from labs.render import choose_params
from labs.services import MAX_SEED, program_for, start_preview_attempt
from labs.validation import ValidationCancelled, ValidationRow, validate_version, variants
from questions.rendering import render_markdown
from sandbox.models import Run
from sandbox.services import cancel_run

logger = logging.getLogger(__name__)
LAB = AuthoringEvent.Subject.LAB
MIN_PUBLISH_SEEDS = 3
MAX_SEEDS = 20
AUTHORING_QUEUE = "authoring"


# ---- preview -----------------------------------------------------------------------------------


def preview(draft: LabDraft, seed: int, language: str) -> dict:
    """What a candidate on ``seed`` is shown: title, briefing, the rendered files, the hints and the
    root-cause options. Raises DraftInvalid when the draft does not parse."""
    spec = parse_files(draft.slug, draft.files).as_json()
    version = LabVersion(spec=spec)  # unsaved: the renderer reads only the spec
    pick = content_language(language)
    return {
        "seed": seed,
        "title": spec["title"][pick],
        "briefing_html": render_markdown(spec["briefing"][pick]),
        "files": program_for(version, seed),
        "entry": spec["entry"],
        "params": choose_params(spec["slug"], spec["params"], seed),
        "hints": [{"cost": h["cost"], "text": h[pick]} for h in spec["hints"]],
        "root_causes": [{"key": o["key"], "text": o[pick]} for o in spec["diagnosis"]["options"]],
        "resources": spec["resources"],
        "tools": spec["tools"],
    }


def start_preview(draft: LabDraft, seed: int, user) -> Attempt:
    """A throw-away attempt on the draft's content, through the real sandbox and grading."""
    with transaction.atomic():
        version = version_of(draft, user)
        attempt = start_preview_attempt(user, version, seed)
        record(AuthoringEvent.Kind.PREVIEWED, LAB, draft.slug, user, draft=draft.pk, version=version.number, seed=seed)
    return attempt


def parse_seed(text: str | None) -> int:
    """The seed of a preview: a whole number from 0 to MAX_SEED (empty: 0)."""
    text = (text or "").strip() or "0"
    if not re.fullmatch(r"\d+", text) or int(text) > MAX_SEED:
        raise DraftRefused(_("seed: a whole number from 0 to %(max)d, got %(text)r") % {"max": MAX_SEED, "text": text})
    return int(text)


# ---- validation --------------------------------------------------------------------------------

SEEDS_RE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_seeds(text: str) -> list[int]:
    """``"0-2"``, ``"0, 1, 5"`` or ``"3"`` (the first three) → distinct seeds; 1–20 of them."""
    text = (text or "").strip()
    if re.fullmatch(r"\d+", text):
        count = int(text)
        if not 1 <= count <= MAX_SEEDS:
            raise DraftRefused(_("seeds: choose 1–%(max)d seeds, got %(count)d") % {"max": MAX_SEEDS, "count": count})
        return list(range(count))
    seeds: list[int] = []
    for part in text.split(","):
        match = SEEDS_RE.match(part)
        if not match:
            raise DraftRefused(
                _("seeds: write a count (3), a range (0-2) or a list (0, 4, 9); got %(text)r") % {"text": text}
            )
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high < low or high - low >= MAX_SEEDS:
            raise DraftRefused(
                _("seeds: %(part)r is not a range of at most %(max)d") % {"part": part.strip(), "max": MAX_SEEDS}
            )
        if high > MAX_SEED:
            raise DraftRefused(
                _("seeds: %(part)r goes above the largest seed, %(max)d") % {"part": part.strip(), "max": MAX_SEED}
            )
        seeds += [s for s in range(low, high + 1) if s not in seeds]
    if not 1 <= len(seeds) <= MAX_SEEDS:
        raise DraftRefused(_("seeds: choose 1–%(max)d seeds, got %(count)d") % {"max": MAX_SEEDS, "count": len(seeds)})
    return seeds


VALIDATION_TASK = "authoring.run_validation"


def enqueue_validation(job_id: int) -> None:
    current_app.send_task(VALIDATION_TASK, args=[job_id], queue=AUTHORING_QUEUE)


def start_validation(draft: LabDraft, seeds: list[int], user) -> ValidationJob:
    """Make (or reuse) the version of the draft's files and queue its validation on ``seeds``."""
    with transaction.atomic():
        version = version_of(draft, user)
        busy = ValidationJob.objects.filter(
            version=version, status__in=[ValidationJob.Status.QUEUED, ValidationJob.Status.RUNNING]
        ).first()
        if busy:
            raise DraftRefused(
                _("version %(number)d is being validated already (started by %(user)s): wait for it or cancel it")
                % {"number": version.number, "user": busy.requested_by.username}
            )
        job = ValidationJob.objects.create(
            draft=draft, version=version, seeds=seeds, requested_by=user,
            total_runs=len(seeds) * len(variants(version)),
        )  # fmt: skip
        record(
            AuthoringEvent.Kind.VALIDATION_STARTED, LAB, draft.slug, user,
            job=job.pk, version=version.number, seeds=seeds,
        )  # fmt: skip
        transaction.on_commit(lambda: enqueue_validation(job.pk))
    return job


def run_validation_job(job_id: int) -> ValidationJob:
    """The worker's part: run every variant, seed by seed, storing each row as it finishes. A job is
    started once only (a redelivered task finds it running or done and leaves it)."""
    now = timezone.now()
    if not ValidationJob.objects.filter(pk=job_id, status=ValidationJob.Status.QUEUED, cancel_requested=False).update(
        status=ValidationJob.Status.RUNNING, started_at=now
    ):
        ValidationJob.objects.filter(pk=job_id, status=ValidationJob.Status.QUEUED).update(
            status=ValidationJob.Status.CANCELLED, finished_at=now
        )
        return ValidationJob.objects.get(pk=job_id)
    job = ValidationJob.objects.select_related("version__lab", "requested_by").get(pk=job_id)
    rows: dict[tuple[int, str], dict] = {}

    def progress(row: ValidationRow) -> None:
        # A revised row (scored again once every seed's faulty program ran) replaces the one shown before,
        # in its place.
        rows[(row.seed, row.variant)] = row_payload(row)
        ValidationJob.objects.filter(pk=job_id).update(rows=list(rows.values()))

    def cancelled() -> bool:
        return ValidationJob.objects.filter(pk=job_id, cancel_requested=True).exists()

    status, message = ValidationJob.Status.ERROR, ""
    try:
        result = validate_version(
            job.version, list(job.seeds), progress, owner=job.requested_by, cancelled=cancelled, publish=False
        )
        passed = bool(result) and all(r.ok for r in result)
        status = ValidationJob.Status.PASSED if passed else ValidationJob.Status.FAILED
    except ValidationCancelled:
        status = ValidationJob.Status.CANCELLED
    except Exception as exc:  # the author sees the platform error instead of a job stuck "running"
        logger.exception("validation job %s failed", job_id)
        message = f"{type(exc).__name__}: {exc}"
    finally:
        ValidationJob.objects.filter(pk=job_id).update(status=status, message=message, finished_at=timezone.now())
        record(
            AuthoringEvent.Kind.VALIDATED if status != ValidationJob.Status.CANCELLED
            else AuthoringEvent.Kind.VALIDATION_CANCELLED,
            LAB, job.version.lab.slug, job.requested_by,
            job=job.pk, version=job.version.number, seeds=list(job.seeds), status=status,
        )  # fmt: skip
    job.refresh_from_db()
    return job


def row_payload(row: ValidationRow) -> dict:
    """A validation row with what its run measured, check by check."""
    data = row.as_dict()
    lab_run = LabRun.objects.filter(run_id=row.run_id).first() if row.run_id else None
    checks = [localized(c) for c in lab_run.checks] if lab_run else []
    data["checks"] = [
        {"name": c["name"], "passed": c["passed"], "measured": str(c.get("measured", "")),
         "threshold": str(c.get("threshold", "")), "counts": c.get("counts", "")}
        for c in checks
    ]  # fmt: skip
    data["metrics"] = lab_run.metrics if lab_run else {}
    return data


def cancel_validation(job: ValidationJob, user) -> bool:
    """Stop a queued or running job: no further run starts, and the run going now is cancelled."""
    active = [ValidationJob.Status.QUEUED, ValidationJob.Status.RUNNING]
    if not ValidationJob.objects.filter(pk=job.pk, status__in=active).update(cancel_requested=True):
        return False
    ValidationJob.objects.filter(pk=job.pk, status=ValidationJob.Status.QUEUED).update(
        status=ValidationJob.Status.CANCELLED, finished_at=timezone.now()
    )
    started = job.started_at or job.created_at
    for lab_run in LabRun.objects.select_related("run").filter(
        version=job.version, kind=LabRun.Kind.VALIDATE, run__owner=job.requested_by,
        run__status__in=list(Run.ACTIVE), created_at__gte=started,
    ):  # fmt: skip
        cancel_run(lab_run.run)
    record(AuthoringEvent.Kind.VALIDATION_CANCELLED, LAB, job.version.lab.slug, user, job=job.pk)
    return True


def job_payload(job: ValidationJob) -> dict:
    started = job.started_at or job.created_at
    finished_runs = LabRun.objects.filter(
        version=job.version, kind=LabRun.Kind.VALIDATE, run__owner=job.requested_by, created_at__gte=started,
        run__status__in=[s for s in Run.Status.values if s not in Run.ACTIVE],
    ).count() if job.started_at else 0  # fmt: skip
    done = max(len(job.rows), min(finished_runs, job.total_runs))
    return {
        "id": job.pk,
        "status": job.status,
        "status_label": job.get_status_display(),
        "finished": job.status not in (ValidationJob.Status.QUEUED, ValidationJob.Status.RUNNING),
        "seeds": job.seeds,
        "total_runs": job.total_runs,
        "done_runs": done,
        "percent": round(100 * done / job.total_runs) if job.total_runs else 0,
        "rows": job.rows,
        "message": job.message,
        "version": job.version.number,
        "requested_by": job.requested_by.username,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


# ---- publish and roll back ---------------------------------------------------------------------


def required_seeds(version: LabVersion) -> int:
    """The seeds a version must pass before it is published: the lab's own demand, and never fewer than 3."""
    declared = version.spec.get("validation_seeds", 0) if isinstance(version.spec, dict) else 0
    return max(MIN_PUBLISH_SEEDS, declared if isinstance(declared, int) else 0)


def passed_seeds(version: LabVersion) -> int:
    """The most seeds one passing validation of this version covered (a job here or ``validatelab``)."""
    counts = [
        len(seeds)
        for seeds in version.validation_jobs.filter(status=ValidationJob.Status.PASSED).values_list("seeds", flat=True)
    ]
    rows = version.validation or []
    if version.validated_at and rows and all(r.get("ok") for r in rows):
        counts.append(len({r["seed"] for r in rows}))
    return max(counts, default=0)


def publish(version: LabVersion, user) -> None:
    need, have = required_seeds(version), passed_seeds(version)
    if version.validated_at is None or have < need:
        raise DraftRefused(
            _("version %(number)d has passed validation on %(have)d seed(s); publishing needs %(need)d: "
              "validate it on at least %(need)d seeds first") % {"number": version.number, "have": have, "need": need}
        )  # fmt: skip
    with transaction.atomic():
        lab = Lab.objects.select_for_update().get(pk=version.lab_id)
        if lab.current_id == version.pk and not lab.retired:
            raise DraftRefused(_("version %(number)d is already the published version") % {"number": version.number})
        if lab.current and lab.current.number > version.number:
            raise DraftRefused(
                _("version %(number)d is older than the published version %(current)d: roll back to it instead")
                % {"number": version.number, "current": lab.current.number}
            )
        if not publish_version(version):
            raise DraftRefused(
                _("version %(number)d could not be published: reload the page") % {"number": version.number}
            )
        record(AuthoringEvent.Kind.PUBLISHED, LAB, lab.slug, user, version=version.number, seeds=have)


def roll_back(version: LabVersion, user, expected_current_id: int | None) -> None:
    """Make an earlier validated version current again; refused if someone published in between."""
    if version.validated_at is None:
        raise DraftRefused(_("version %(number)d never passed validation") % {"number": version.number})
    with transaction.atomic():
        lab = Lab.objects.get(pk=version.lab_id)
        if lab.current_id == version.pk:
            raise DraftRefused(_("version %(number)d is already the published version") % {"number": version.number})
        previous = lab.current.number if lab.current else None
        if not Lab.make_current(version, expected_current_id):
            raise DraftRefused(
                _("the published version changed since you opened this page (now version %(current)s): reload it")
                % {"current": previous}
            )
        record(AuthoringEvent.Kind.ROLLED_BACK, LAB, lab.slug, user, version=version.number, previous=previous)


# ---- versions, diffs, export -------------------------------------------------------------------


@dataclass
class VersionRow:
    version: LabVersion
    made_by: str
    passed_seeds: int
    publishable: bool
    is_current: bool
    last_job: ValidationJob | None
    diff_stat: dict = field(default_factory=dict)


def version_rows(lab: Lab) -> list[VersionRow]:
    versions = list(lab.versions.order_by("-number"))
    sources = {s.version_id: s for s in LabVersionSource.objects.filter(version__in=versions).select_related("made_by")}
    rows = []
    for version in versions:
        source = sources.get(version.pk)
        have = passed_seeds(version)
        rows.append(
            VersionRow(
                version=version, made_by=source.made_by.username if source else _("catalog (loadlabs)"),
                passed_seeds=have, publishable=version.validated_at is not None and have >= required_seeds(version),
                is_current=lab.current_id == version.pk,
                last_job=version.validation_jobs.select_related("requested_by").first(),
            )
        )  # fmt: skip
    return rows


def version_diff(version: LabVersion) -> tuple[LabVersion | None, str]:
    """(previous version, unified diff of their folders); the first version diffs against nothing."""
    previous = version.lab.versions.filter(number__lt=version.number).order_by("-number").first()
    old = files_of_version(previous) if previous else {}
    new = files_of_version(version)
    chunks = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path), new.get(path)
        if a == b:
            continue
        chunks.extend(
            difflib.unified_diff(
                (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True),
                fromfile=f"v{previous.number}/{path}" if previous and a is not None else "/dev/null",
                tofile=f"v{version.number}/{path}" if b is not None else "/dev/null",
            )
        )  # fmt: skip
    return previous, "".join(chunks)


def export_version(version: LabVersion, user) -> bytes:
    data = write_zip(version.lab.slug, files_of_version(version))
    record(AuthoringEvent.Kind.EXPORTED, LAB, version.lab.slug, user, version=version.number)
    return data

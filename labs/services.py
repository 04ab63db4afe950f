"""What candidates do in a lab: start, edit, run, probe, diagnose, take hints, submit a fix.

Each action is one transaction; runs are enqueued after commit by the sandbox. Every
refusal raises :class:`LabRefused` with a message meant for the candidate.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from labs.diagnosis import grade_diagnosis
from labs.models import Attempt, HintReveal, Lab, LabRun, LabVersion
from labs.render import choose_params, probe_seed, render_files, variant_values
from labs.scoring import compute_score, hint_costs, rescore_attempt
from labs.spec import services_env
from sandbox.models import Run
from sandbox.services import RunRejected, cancel_run, create_run, validate_files

# What each debug toggle sets for the program; the candidate picks them per run.
TOGGLE_ENV = {
    "detect_anomaly": {"FAULTLINE_DETECT_ANOMALY": "1"},
    "tracemalloc": {"FAULTLINE_TRACEMALLOC": "1"},
    "distributed_debug": {"TORCH_DISTRIBUTED_DEBUG": "INFO"},
    "faulthandler_timeout": {"FAULTLINE_FAULTHANDLER_TIMEOUT": "10"},
    "nccl_debug": {"NCCL_DEBUG": "INFO"},
}
MAX_DIAGNOSIS_CHARS = 5000
CLOSED = "time is up for this lab: the attempt is closed and keeps the work as it was"
TEXT_SUFFIXES = (".py", ".txt", ".json", ".yaml", ".yml", ".cfg", ".csv", ".md")


class LabRefused(ValueError):
    """The action is not allowed now; the message says why and what to do."""


def program_for(version: LabVersion, seed: int, overlay: str | None = None, hidden: bool = False) -> dict:
    """The rendered files of a variant; ``overlay`` is "solution" or "bad:<name>"; ``hidden`` adds the files
    that only a graded run gets."""
    spec = version.spec
    values = choose_params(spec["slug"], spec["params"], seed)
    files = render_files(spec["program"], values)
    if overlay == "solution":
        files.update(render_files(spec["solution"], values))
    elif overlay and overlay.startswith("bad:"):
        files.update(render_files(spec["bad_fixes"][overlay[4:]], values))
    if hidden:
        files.update(hidden_files(spec, seed, values))
    return files


def hidden_files(spec: dict, seed: int, values: dict | None = None) -> dict[str, str]:
    """Rendered from the attempt's public seed only: nothing in them is derived from the grader's held-out seed."""
    values = values if values is not None else choose_params(spec["slug"], spec["params"], seed)
    return render_files(spec["hidden"], {**values, "probe_seed": probe_seed(spec["slug"], seed)})


def graded_run_options(spec: dict) -> dict:
    """How a submitted fix is run (``create_run`` keywords): the grading entry, the lab's resources."""
    resources = spec["resources"]
    return {
        "entry": spec["grade_entry"], "ranks": resources["ranks"], "timeout_seconds": resources["timeout_seconds"],
        "memory_mb": resources["memory_mb"], "cpus": resources["cpus"], "gpu": resources["gpu"], "purpose": "grade",
    }  # fmt: skip


def published_labs():
    return Lab.objects.filter(retired=False, current__validated_at__isnull=False).select_related("current")


# The largest variant seed: below 2**31 fits the seed columns of attempts and runs. Previews, validation and
# gradefix accept exactly the seeds a candidate can be given.
MAX_SEED = 2**31 - 1


def new_seed() -> int:
    return secrets.randbelow(MAX_SEED + 1)


@transaction.atomic
def start_attempt(user, lab: Lab, *, version: LabVersion | None = None, seed: int | None = None,
                  purpose: str = Attempt.Purpose.PRACTICE) -> Attempt:  # fmt: skip
    """A new attempt on the published version and a fresh seed, or on the ``version`` and ``seed`` an
    interview fixed when it was made (so the candidate gets the program the interviewers saw)."""
    if version is None:
        if not lab.published:
            raise LabRefused("this lab is not published yet")
        version = lab.current
    elif version.lab_id != lab.pk or version.validated_at is None:
        raise LabRefused("this version of the lab has not passed validation")
    seed = new_seed() if seed is None else seed
    return Attempt.objects.create(
        user=user, version=version, seed=seed, files=program_for(version, seed), purpose=purpose
    )


def start_preview_attempt(user, version: LabVersion, seed: int) -> Attempt:
    """A throw-away attempt an author makes on any version (validated or not) to try it as a candidate
    would: the real sandbox and grading, but never listed, scored for anyone or counted against a quota."""
    return Attempt.objects.create(
        user=user, version=version, seed=seed, files=program_for(version, seed), purpose=Attempt.Purpose.PREVIEW
    )


def counted_attempts():
    """Attempts that are the user's own work (a preview is an author's throw-away trial)."""
    return Attempt.objects.exclude(purpose=Attempt.Purpose.PREVIEW)


def ensure_open(attempt: Attempt) -> None:
    if attempt.closed_at is not None:
        raise LabRefused(CLOSED)


@transaction.atomic
def close_attempt(attempt: Attempt) -> list[int]:
    """Freeze the attempt (no more edits, runs, diagnosis or hints) and cancel its runs still going;
    the cancelled runs' ids are returned. Closing twice changes nothing."""
    Attempt.objects.filter(pk=attempt.pk, closed_at__isnull=True).update(closed_at=timezone.now())
    cancelled = []
    for lab_run in attempt.lab_runs.select_related("run").filter(run__status__in=list(Run.ACTIVE)):
        if cancel_run(lab_run.run):
            cancelled.append(lab_run.run_id)
    attempt.refresh_from_db()
    return cancelled


def original_files(attempt: Attempt) -> dict[str, str]:
    return program_for(attempt.version, attempt.seed)


def clean_files(spec: dict, files: dict) -> dict[str, str]:
    """A candidate's program files as the sandbox takes them, or LabRefused naming the file and the problem."""
    try:
        clean = validate_files(files)
    except RunRejected as exc:
        raise LabRefused(str(exc)) from None
    entry = spec["entry"]
    if entry not in clean:
        raise LabRefused(f"files: the entry point {entry} cannot be removed")
    for name in clean:
        if not name.endswith(TEXT_SUFFIXES):
            raise LabRefused(f"files[{name}]: only text files (.py, .txt, .json, .yaml, .cfg, .csv, .md)")
    return clean


@transaction.atomic
def save_files(attempt: Attempt, files: dict) -> Attempt:
    ensure_open(attempt)
    attempt.files = clean_files(attempt.version.spec, files)
    attempt.save(update_fields=["files", "updated_at"])
    return attempt


def reset_files(attempt: Attempt) -> Attempt:
    ensure_open(attempt)
    attempt.files = original_files(attempt)
    attempt.save(update_fields=["files", "updated_at"])
    return attempt


def _check_quota(user) -> None:
    active = Run.objects.filter(owner=user, status__in=list(Run.ACTIVE), lab_run__attempt__isnull=False)
    if active.exists():
        raise LabRefused("you already have a run in progress: wait for it to finish or cancel it")
    since = timezone.now() - timedelta(hours=1)
    # Runs the platform failed (status error) are not counted: a platform fault costs the candidate nothing.
    # Nor are an author's previews and validation runs.
    used = (
        Run.objects.filter(owner=user, created_at__gte=since, lab_run__isnull=False)
        .exclude(status=Run.Status.ERROR)
        .exclude(lab_run__kind=LabRun.Kind.VALIDATE)
        .exclude(lab_run__attempt__purpose=Attempt.Purpose.PREVIEW)
        .count()
    )
    if used >= settings.LAB_RUNS_PER_HOUR:
        raise LabRefused(
            f"you have used your {settings.LAB_RUNS_PER_HOUR} lab runs for this hour; "
            "the oldest frees up within the hour"
        )


@transaction.atomic
def start_run(
    attempt: Attempt, toggles: list[str] | None = None, fix: bool = False, pause: dict | None = None
) -> LabRun:
    """Run the working copy as it is (``fix=False``) or submit it as the fix to be graded. ``pause``: where
    a plain run stops for the tools (``at_step``, ``on_nonfinite``, ``memory_mib``; see sandbox.pausing)."""
    if fix and pause:
        raise LabRefused("pause: a fix is graded straight through; pause a plain run instead")
    # Lock the user's row so two tabs cannot both pass the one-active-run check.
    type(attempt.user).objects.select_for_update().filter(pk=attempt.user_id).first()
    ensure_open(attempt)
    _check_quota(attempt.user)
    spec = attempt.version.spec
    toggles = toggles or []
    # Plain runs too: the program's store client needs the store. A fix gets the graded settings.
    env = services_env(spec, variant_values(spec, attempt.seed), graded=fix)
    for toggle in toggles:
        if toggle not in TOGGLE_ENV or toggle not in spec["tools"]:
            raise LabRefused(f"toggles: {toggle!r} is not a tool of this lab ({', '.join(spec['tools'])})")
        env.update(TOGGLE_ENV[toggle])
    files = dict(attempt.files)
    options = graded_run_options(spec)
    if fix:
        files.update(hidden_files(spec, attempt.seed))
    else:
        options.update(entry=spec["entry"], purpose="run")
    try:
        priority = Run.Priority.INTERVIEW if attempt.is_interview else Run.Priority.PRACTICE
        run = create_run(owner=attempt.user, files=files, env=env, priority=priority, pause=pause, **options)
    except RunRejected as exc:
        raise LabRefused(str(exc)) from None
    kind = LabRun.Kind.FIX if fix else LabRun.Kind.RUN
    return LabRun.objects.create(run=run, version=attempt.version, attempt=attempt, kind=kind, seed=attempt.seed)


@transaction.atomic
def submit_diagnosis(attempt: Attempt, choice: str, text: str) -> Attempt:
    ensure_open(attempt)
    spec = attempt.version.spec["diagnosis"]
    keys = [o["key"] for o in spec["options"]]
    if choice not in keys:
        raise LabRefused(f"root_cause: choose one of {', '.join(keys)}")
    text = (text or "").strip()
    if len(text) < 20:
        raise LabRefused("evidence: describe what you observed and why it points to the cause (20 characters at least)")
    if len(text) > MAX_DIAGNOSIS_CHARS:
        raise LabRefused(f"evidence: at most {MAX_DIAGNOSIS_CHARS} characters")
    version = attempt.version.spec
    # Variant points check the evidence against this attempt's own seeded values.
    values = choose_params(version["slug"], version["params"], attempt.seed)
    score, detail = grade_diagnosis(spec, choice, text, values, version["params"])
    Attempt.objects.filter(pk=attempt.pk).update(
        diagnosis_choice=choice, diagnosis_text=text, diagnosis_score=score, diagnosis_detail=detail,
        diagnosed_at=timezone.now(),
    )  # fmt: skip
    rescore_attempt(attempt.pk, "diagnosis")
    attempt.refresh_from_db()
    return attempt


def save_diagnosis_draft(attempt: Attempt, choice: str, text: str) -> dict:
    """Keep the diagnosis being written (unscored), so a page reload or an interviewer sees it."""
    ensure_open(attempt)
    keys = [o["key"] for o in attempt.version.spec["diagnosis"]["options"]]
    if choice and choice not in keys:
        raise LabRefused(f"root_cause: choose one of {', '.join(keys)}")
    if not isinstance(text, str) or len(text) > MAX_DIAGNOSIS_CHARS:
        raise LabRefused(f"evidence: at most {MAX_DIAGNOSIS_CHARS} characters")
    draft = {"root_cause": choice or "", "evidence": text, "saved_at": timezone.now().isoformat()}
    # Guarded on the row, not on this copy: the attempt may have closed since it was read.
    if not Attempt.objects.filter(pk=attempt.pk, closed_at__isnull=True).update(diagnosis_draft=draft):
        raise LabRefused(CLOSED)
    return draft


@transaction.atomic
def reveal_hint(attempt: Attempt, index: int) -> HintReveal:
    ensure_open(attempt)
    hints = attempt.version.spec["hints"]
    if not 0 <= index < len(hints):
        raise LabRefused(f"hint: choose 0–{len(hints) - 1}")
    taken = set(attempt.hint_reveals.values_list("index", flat=True))
    if index in taken:
        return attempt.hint_reveals.get(index=index)
    if index > 0 and index - 1 not in taken:
        raise LabRefused("hints open in order: reveal the previous hint first")
    reveal = HintReveal.objects.create(attempt=attempt, index=index, cost=hints[index]["cost"])
    rescore_attempt(attempt.pk, "hint")
    return reveal


def current_score(attempt: Attempt) -> dict:
    best_fix = (
        LabRun.objects.filter(attempt=attempt, kind=LabRun.Kind.FIX, graded_at__isnull=False)
        .order_by("-fix_percent", "-created_at")
        .first()
    )
    _, detail = compute_score(best_fix.fix_percent if best_fix else 0, attempt.diagnosis_score, hint_costs(attempt.pk))
    return detail

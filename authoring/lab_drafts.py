"""Lab drafts: a lab folder edited in the browser, checked by the same parser as ``loadlabs``.

A draft is started from scratch (a small lab that validates as it is), from a copy of any lab version,
or from an uploaded zip. Saves name the revision they started from, so two authors editing one
draft cannot silently overwrite each other. Parsing writes the files into a temporary folder and
runs ``labs.spec.load_lab`` on it, so what passes here passes ``loadlabs``.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from authoring.audit import record
from authoring.lab_zip import LabFilesError, check_files, check_path, read_zip, spec_to_files
from authoring.models import AuthoringEvent, LabDraft, LabVersionSource
from labs.loader import unknown_questions
from labs.models import Lab, LabVersion
from labs.spec import CATALOG_DIR, SLUG_RE, LabSpec, LabSpecError, load_lab

LAB = AuthoringEvent.Subject.LAB


class DraftRefused(ValueError):
    """The action is not allowed; the message says why."""


class StaleDraft(DraftRefused):
    """Someone saved the draft after this editor loaded it."""

    def __init__(self, draft: LabDraft) -> None:
        self.draft = draft
        when = timezone.localtime(draft.updated_at).strftime("%Y-%m-%d %H:%M:%S")
        super().__init__(
            _(
                "%(user)s saved this draft at %(when)s (revision %(revision)d) after you opened it. Your text is "
                "still in the editor: copy what you need, reload the draft, and apply your changes again."
            )
            % {"user": draft.updated_by.username, "when": when, "revision": draft.revision}
        )


@dataclass
class Problem:
    """One parser error, placed at the file and line it names (line None: the file as a whole)."""

    file: str
    line: int | None
    where: str
    problem: str

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        line = f":{self.line}" if self.line else ""
        return f"{self.file}{line}: {self.where}: {self.problem}"


class DraftInvalid(DraftRefused):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


# ---- parsing ------------------------------------------------------------------------------------


def parse_files(slug: str, files: dict[str, str]) -> LabSpec:
    """The spec ``loadlabs`` would make of these files in a folder named ``slug``, or DraftInvalid."""
    try:
        files = check_files(files)
    except LabFilesError as exc:
        raise DraftInvalid([Problem("", None, _("files"), str(exc))]) from None
    with tempfile.TemporaryDirectory(prefix="faultline-draft-") as tmp:
        folder = Path(tmp) / slug
        folder.mkdir()
        for path, text in files.items():
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        try:
            spec = load_lab(folder)
        except LabSpecError as exc:
            raise DraftInvalid([problem_of(exc, folder, files)]) from None
    missing = unknown_questions(spec)
    if missing:
        line = locate(files.get("lab.yaml", ""), "questions")
        raise DraftInvalid(
            [Problem("lab.yaml", line, "questions", _("%(slug)r is not a question in the bank") % {"slug": missing[0]})]
        )
    spec.path = ""
    return spec


def check(slug: str, files: dict[str, str]) -> list[Problem]:
    """The problems the parser finds (empty: ``loadlabs`` accepts the folder)."""
    try:
        parse_files(slug, files)
    except DraftInvalid as exc:
        return exc.problems
    return []


LINE_RE = re.compile(r"^line (\d+)$")


def problem_of(exc: LabSpecError, folder: Path, files: dict[str, str]) -> Problem:
    try:
        relative = Path(exc.path).relative_to(folder).as_posix()
    except ValueError:
        relative = ""
    relative = "" if relative == "." else relative
    where = exc.where
    match = LINE_RE.match(where)
    if match:
        return Problem(relative, int(match.group(1)), where, exc.problem)
    line = locate(files.get(relative, ""), where) if relative == "lab.yaml" else None
    return Problem(relative, line, where, exc.problem)


FIELD_RE = re.compile(r"([A-Za-z0-9_\-]+)|\[(\d+)\]")


def locate(yaml_text: str, where: str) -> int | None:
    """The line of lab.yaml holding the field the parser named (``params.lr.float``, ``checks[2] (name).gate``):
    the deepest part of the path that exists. None when the YAML does not even compose."""
    try:
        node = yaml.compose(yaml_text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if node is None:
        return None
    where = re.sub(r"\s*\([^)]*\)", "", where)  # "checks[0] (finished).gate" → "checks[0].gate"
    line = None
    for part in FIELD_RE.finditer(where):
        key, index = part.group(1), part.group(2)
        if index is not None and isinstance(node, yaml.SequenceNode):
            i = int(index)
            if i >= len(node.value):
                break
            node = node.value[i]
            line = node.start_mark.line + 1
        elif key is not None and isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == key), None)
            if found is None:
                break
            line = found[0].start_mark.line + 1
            node = found[1]
        else:
            break
    return line


# ---- creating drafts ----------------------------------------------------------------------------

SKELETON_PROGRAM = '''"""Adds up the numbers 1..{{ count }} and checks the answer."""


def total(count):
    # The bug: range stops one short.
    return sum(range(1, count))


if __name__ == "__main__":
    count = {{ count }}
    result = total(count)
    print(f"total of 1..{count} = {result}", flush=True)
    assert result == count * (count + 1) // 2, "the total is wrong"
'''
SKELETON_SOLUTION = SKELETON_PROGRAM.replace("# The bug: range stops one short.\n    ", "").replace(
    "range(1, count)", "range(1, count + 1)"
)


def skeleton(slug: str) -> dict[str, str]:
    """A minimal lab that passes the parser and validation as it is, for an author to grow from."""
    lab_yaml = f"""slug: {slug}
family: correctness
difficulty: 1
title:
  en: A total that is one short
  zh: 少加了一项的总和
briefing:
  en: |
    **Ticket:** `main.py` adds up the numbers 1 to N, and the job fails its own check.
    Make the total right and explain what was wrong.
  zh: |
    **工单：** `main.py` 计算 1 到 N 的总和，但任务自己的检查失败了。请修正总和并解释问题原因。
resources: {{ranks: 1, cpus: 1.0, memory_mb: 512, timeout_seconds: 30, gpu: none}}
entry: main.py
params:
  count: {{int: [10, 1000]}}
checks:
  - {{name: finished, type: finished_in_time}}
  - {{name: exit-ok, type: ranks_exit_zero}}
hints:
  - {{cost: 5, en: "Which numbers does range(1, count) give?", zh: "range(1, count) 会给出哪些数？"}}
diagnosis:
  options:
    - key: off-by-one
      en: range stops before its end value, so the last number is never added
      zh: range 不包含终点值，所以最后一个数没有被加上
    - {{key: overflow, en: "The sum overflows", zh: "求和溢出"}}
  correct: off-by-one
  rubric:
    - key: cause
      weight: 1
      en: range(1, count) stops at count - 1
      zh: range(1, count) 在 count - 1 处停止
      concepts:
        - [range, off by one, off-by-one, 差一]
tools: [stacks, memory]
"""
    return {"lab.yaml": lab_yaml, "program/main.py": SKELETON_PROGRAM, "solution/main.py": SKELETON_SOLUTION}


def files_of_version(version: LabVersion) -> dict[str, str]:
    """The folder of a version: as its author wrote it in the browser, else the catalog folder when it still
    holds exactly this version (comments kept), else rebuilt from the stored spec (same content hash)."""
    source = LabVersionSource.objects.filter(version=version).first()
    if source:
        return dict(source.files)
    folder = CATALOG_DIR / version.lab.slug
    if folder.is_dir():
        try:
            if load_lab(folder).content_hash() == version.content_hash:
                return read_folder(folder)
        except LabSpecError:
            pass
    return spec_to_files(version.spec)


def read_folder(folder: Path) -> dict[str, str]:
    files = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
            files[relative] = path.read_text(encoding="utf-8")
    return files


def _check_new_slug(slug: str) -> str:
    slug = (slug or "").strip()
    if not SLUG_RE.match(slug):
        raise DraftRefused(_("slug: lowercase words joined by '-', e.g. nan-my-new-lab; got %(slug)r") % {"slug": slug})
    if Lab.objects.filter(slug=slug).exists():
        raise DraftRefused(
            _("slug: a lab %(slug)s exists already: start a draft from a copy of it instead") % {"slug": slug}
        )
    return slug


@transaction.atomic
def create_from_scratch(user, slug: str) -> LabDraft:
    slug = _check_new_slug(slug)
    draft = LabDraft.objects.create(slug=slug, files=skeleton(slug), created_by=user, updated_by=user)
    record(AuthoringEvent.Kind.CREATED, LAB, slug, user, draft=draft.pk, source="scratch")
    return draft


@transaction.atomic
def create_from_version(user, version: LabVersion) -> LabDraft:
    draft = LabDraft.objects.create(
        slug=version.lab.slug, lab=version.lab, based_on=version, files=files_of_version(version),
        created_by=user, updated_by=user,
    )  # fmt: skip
    record(AuthoringEvent.Kind.CREATED, LAB, draft.slug, user, draft=draft.pk, source=f"copy of v{version.number}")
    return draft


@transaction.atomic
def create_from_zip(user, data: bytes, filename: str = "") -> LabDraft:
    """A draft holding the zip's lab folder; refused (nothing written) when the zip breaks a safety rule.
    The lab's slug comes from its lab.yaml (or the zip's folder name); an existing lab gets a draft of it."""
    try:
        folder, files = read_zip(data)
    except LabFilesError as exc:
        raise DraftRefused(str(exc)) from None
    slug = _slug_in(files.get("lab.yaml", "")) or folder or ""
    if not SLUG_RE.match(slug):
        raise DraftRefused(_("lab.yaml: slug: lowercase words joined by '-', got %(slug)r") % {"slug": slug})
    lab = Lab.objects.filter(slug=slug).first()
    draft = LabDraft.objects.create(
        slug=slug, lab=lab, based_on=lab.current if lab else None, files=files, created_by=user, updated_by=user
    )
    record(AuthoringEvent.Kind.IMPORTED, LAB, slug, user, draft=draft.pk, filename=filename[:200], files=len(files))
    return draft


def _slug_in(lab_yaml: str) -> str | None:
    try:
        meta = yaml.safe_load(lab_yaml)
    except yaml.YAMLError:
        return None
    slug = meta.get("slug") if isinstance(meta, dict) else None
    return slug if isinstance(slug, str) else None


# ---- editing -----------------------------------------------------------------------------------


def live_drafts():
    return LabDraft.objects.filter(discarded_at__isnull=True)


@transaction.atomic
def save_draft(draft: LabDraft, files: dict, revision: int, user) -> LabDraft:
    """Store ``files`` if the draft is still at ``revision``; StaleDraft (naming who saved, and when) if not.
    The update is one guarded UPDATE, so two saves racing cannot both win."""
    try:
        files = check_files(files)
    except LabFilesError as exc:
        raise DraftRefused(str(exc)) from None
    if "lab.yaml" not in files:
        raise DraftRefused(_("lab.yaml: a lab folder needs it; it cannot be deleted"))
    if draft.discarded_at is not None:
        raise DraftRefused(_("this draft was discarded"))
    moved = LabDraft.objects.filter(pk=draft.pk, revision=revision, discarded_at__isnull=True).update(
        files=files, revision=F("revision") + 1, updated_by=user, updated_at=timezone.now()
    )
    draft.refresh_from_db()
    if not moved:
        raise StaleDraft(draft)
    record(AuthoringEvent.Kind.EDITED, LAB, draft.slug, user, draft=draft.pk, revision=draft.revision)
    return draft


def add_file(draft: LabDraft, path: str, revision: int, user, text: str = "") -> LabDraft:
    path = _checked(path)
    if path in draft.files:
        raise DraftRefused(_("%(path)s: a file with this name exists already") % {"path": path})
    return save_draft(draft, {**draft.files, path: text}, revision, user)


def rename_file(draft: LabDraft, path: str, new_path: str, revision: int, user) -> LabDraft:
    new_path = _checked(new_path)
    if path not in draft.files:
        raise DraftRefused(_("%(path)s: no such file in this draft") % {"path": path})
    if new_path in draft.files:
        raise DraftRefused(_("%(path)s: a file with this name exists already") % {"path": new_path})
    files = {name: text for name, text in draft.files.items() if name != path}
    files[new_path] = draft.files[path]
    return save_draft(draft, files, revision, user)


def delete_file(draft: LabDraft, path: str, revision: int, user) -> LabDraft:
    if path not in draft.files:
        raise DraftRefused(_("%(path)s: no such file in this draft") % {"path": path})
    return save_draft(draft, {name: text for name, text in draft.files.items() if name != path}, revision, user)


def _checked(path: str) -> str:
    try:
        return check_path((path or "").strip())
    except LabFilesError as exc:
        raise DraftRefused(str(exc)) from None


@transaction.atomic
def discard_draft(draft: LabDraft, user) -> None:
    LabDraft.objects.filter(pk=draft.pk, discarded_at__isnull=True).update(discarded_at=timezone.now())
    record(AuthoringEvent.Kind.DISCARDED, LAB, draft.slug, user, draft=draft.pk)


# ---- drafts become versions ---------------------------------------------------------------------


@transaction.atomic
def version_of(draft: LabDraft, user) -> LabVersion:
    """The lab version holding the draft's current files (made now when new, never published by this).
    Identical content gives the same version, so validating twice does not multiply versions."""
    from labs.loader import add_version

    spec = parse_files(draft.slug, draft.files)
    version, created = add_version(spec, origin=Lab.Origin.BROWSER)
    if created:
        LabVersionSource.objects.create(version=version, files=draft.files, draft=draft, made_by=user)
    if draft.lab_id is None:
        LabDraft.objects.filter(pk=draft.pk).update(lab=version.lab)
        draft.lab = version.lab
    return version

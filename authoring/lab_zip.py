"""Lab folders as zip files, and the path rules every draft file obeys.

An uploaded zip is checked whole before anything is written: a hostile archive (path traversal,
absolute paths, symbolic links, too many or too large files, binary content) is refused with a
message naming the entry. Export writes ``<slug>/lab.yaml`` … so unzipping into ``labs/catalog/``
gives a folder ``loadlabs`` accepts unchanged.
"""

from __future__ import annotations

import io
import re
import stat
import zipfile

import yaml
from django.utils.translation import gettext as _

MAX_FILES = 80
MAX_FILE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 2 * 1024 * 1024
MAX_ZIP_BYTES = 4 * 1024 * 1024
TOP_FILES = ("lab.yaml", "grader.py")
TREES = ("program", "solution", "hidden", "bad_fixes")
PART_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
# Fixed entry times keep an export byte-identical for identical content.
ZIP_TIME = (2024, 1, 1, 0, 0, 0)


class LabFilesError(ValueError):
    """A lab file or archive is refused; the message names the file and the problem."""


def check_path(path: str) -> str:
    """``path`` if it is a place a lab folder has a file (lab.yaml, grader.py, program/…, solution/…,
    hidden/…, bad_fixes/<name>/…), else LabFilesError saying why."""
    if not isinstance(path, str) or not path:
        raise LabFilesError(_("A file needs a name."))
    if path.startswith("/") or "\\" in path or re.match(r"^[A-Za-z]:", path):
        raise LabFilesError(_("%(path)s: absolute paths are not allowed") % {"path": path})
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise LabFilesError(_("%(path)s: '..', '.' and empty path parts are not allowed") % {"path": path})
    bad = next((part for part in parts if not PART_RE.match(part)), None)
    if bad is not None:
        raise LabFilesError(
            _("%(path)s: %(part)r: names use letters, digits, '.', '_' and '-' only") % {"path": path, "part": bad}
        )
    if len(parts) == 1:
        if path not in TOP_FILES:
            raise LabFilesError(
                _("%(path)s: at the top of a lab folder only lab.yaml and grader.py; other files go under "
                  "program/, solution/, hidden/ or bad_fixes/<name>/") % {"path": path}
            )  # fmt: skip
        return path
    if parts[0] not in TREES:
        raise LabFilesError(
            _("%(path)s: not part of a lab folder (program/, solution/, hidden/, bad_fixes/<name>/)") % {"path": path}
        )
    if parts[0] == "bad_fixes" and len(parts) < 3:
        raise LabFilesError(_("%(path)s: a cover-up's files go under bad_fixes/<name>/") % {"path": path})
    if "__pycache__" in parts:
        raise LabFilesError(_("%(path)s: compiled files are not part of a lab") % {"path": path})
    return path


def check_text(path: str, data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise LabFilesError(
            _("%(path)s: %(size)d bytes, the limit is %(limit)d")
            % {"path": path, "size": len(data), "limit": MAX_FILE_BYTES}
        )
    if b"\0" in data:
        raise LabFilesError(_("%(path)s: binary files are not allowed, only UTF-8 text") % {"path": path})
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise LabFilesError(_("%(path)s: not UTF-8 text") % {"path": path}) from None


def check_files(files: dict) -> dict[str, str]:
    """A whole draft's files as stored, or LabFilesError for the first that breaks a rule."""
    if not isinstance(files, dict):
        raise LabFilesError(_("files must map paths to text"))
    if len(files) > MAX_FILES:
        raise LabFilesError(_("at most %(limit)d files, got %(count)d") % {"limit": MAX_FILES, "count": len(files)})
    clean, total = {}, 0
    for path, text in files.items():
        check_path(path)
        if not isinstance(text, str):
            raise LabFilesError(_("%(path)s: the content must be text") % {"path": path})
        data = text.encode("utf-8")
        check_text(path, data)
        total += len(data)
        clean[path] = text
    if total > MAX_TOTAL_BYTES:
        raise LabFilesError(
            _("the files come to %(size)d bytes, the limit is %(limit)d") % {"size": total, "limit": MAX_TOTAL_BYTES}
        )
    return dict(sorted(clean.items()))


def read_zip(data: bytes) -> tuple[str | None, dict[str, str]]:
    """(folder name or None, files) of an uploaded lab zip. Every entry is checked before any is read, so a
    refused archive leaves nothing behind; the folder name is the single top-level folder, if there is one."""
    if len(data) > MAX_ZIP_BYTES:
        raise LabFilesError(
            _("the zip is %(size)d bytes, the limit is %(limit)d") % {"size": len(data), "limit": MAX_ZIP_BYTES}
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        raise LabFilesError(_("not a zip file")) from None
    with archive:
        entries = []
        for info in archive.infolist():
            name = info.filename
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise LabFilesError(_("%(path)s: symbolic links are not allowed") % {"path": name})
            if name.startswith("/") or "\\" in name or re.match(r"^[A-Za-z]:", name):
                raise LabFilesError(_("%(path)s: absolute paths are not allowed") % {"path": name})
            if ".." in name.split("/"):
                raise LabFilesError(_("%(path)s: '..' would leave the lab folder") % {"path": name})
            if info.is_dir():
                continue
            if info.flag_bits & 0x1:
                raise LabFilesError(_("%(path)s: encrypted entries are not allowed") % {"path": name})
            entries.append(info)
        if len(entries) > MAX_FILES:
            raise LabFilesError(
                _("at most %(limit)d files, the zip has %(count)d") % {"limit": MAX_FILES, "count": len(entries)}
            )
        if sum(info.file_size for info in entries) > MAX_TOTAL_BYTES:
            raise LabFilesError(_("the files unpack to more than %(limit)d bytes") % {"limit": MAX_TOTAL_BYTES})
        folder = _common_folder([info.filename for info in entries])
        files, total = {}, 0
        for info in entries:
            path = info.filename[len(folder) + 1 :] if folder else info.filename
            if "__pycache__" in path.split("/") or path.split("/")[-1] in (".DS_Store",):
                continue
            check_path(path)
            if info.file_size > MAX_FILE_BYTES:
                raise LabFilesError(
                    _("%(path)s: %(size)d bytes, the limit is %(limit)d")
                    % {"path": path, "size": info.file_size, "limit": MAX_FILE_BYTES}
                )
            # The header's size may lie (a zip bomb): read no more than the limit allows.
            with archive.open(info) as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
            total += len(raw)
            if total > MAX_TOTAL_BYTES:
                raise LabFilesError(_("the files unpack to more than %(limit)d bytes") % {"limit": MAX_TOTAL_BYTES})
            files[path] = check_text(path, raw)
    if "lab.yaml" not in files:
        raise LabFilesError(_("lab.yaml: missing (the zip must hold one lab folder)"))
    return folder, dict(sorted(files.items()))


def _common_folder(names: list[str]) -> str | None:
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1 and all("/" in name for name in names):
        top = tops.pop()
        if top not in TREES:
            return top
    return None


def write_zip(slug: str, files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(f"{slug}/{path}", date_time=ZIP_TIME)
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[path].encode("utf-8"))
    return buffer.getvalue()


# ---- a stored spec back to a folder --------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def spec_to_files(spec: dict) -> dict[str, str]:
    """The lab folder of a parsed spec (LabSpec.as_json): parsing it again gives the same content hash.
    Used for versions that came from the catalog, whose original lab.yaml text is not stored."""
    meta: dict = {
        "slug": spec["slug"], "family": spec["family"], "difficulty": spec["difficulty"],
        "title": spec["title"], "briefing": spec["briefing"],
    }  # fmt: skip
    if spec["questions"]:
        meta["questions"] = spec["questions"]
    meta["resources"] = spec["resources"]
    meta["entry"] = spec["entry"]
    if spec["grade_entry"] != spec["entry"]:
        meta["grade_entry"] = spec["grade_entry"]
    params = {}
    for param in spec["params"]:
        if param["kind"] == "choice":
            params[param["name"]] = {"choices": param["choices"]}
        elif param["kind"] == "derived":
            params[param["name"]] = {"derived": param["expr"]}
        else:
            params[param["name"]] = {param["kind"]: [param["low"], param["high"]], "digits": param["digits"]}
    if params:
        meta["params"] = params
    meta["checks"] = [
        {"name": c["name"], "type": c["type"], **({"gate": True} if c["gate"] else {}), **c["options"]}
        for c in spec["checks"]
    ]
    if spec["hints"]:
        meta["hints"] = spec["hints"]
    meta["diagnosis"] = spec["diagnosis"]
    meta["tools"] = spec["tools"]
    if spec["static_flags"]:
        meta["static_flags"] = [{f["mode"]: f["pattern"], "en": f["en"], "zh": f["zh"]} for f in spec["static_flags"]]
    if spec["bad_fix_notes"]:
        meta["bad_fixes"] = spec["bad_fix_notes"]
    text = yaml.dump(meta, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=100)
    files = {"lab.yaml": text}
    for tree in ("program", "solution", "hidden"):
        files.update({f"{tree}/{path}": body for path, body in spec[tree].items()})
    for name, tree_files in spec["bad_fixes"].items():
        files.update({f"bad_fixes/{name}/{path}": body for path, body in tree_files.items()})
    if spec["grader_source"]:
        files["grader.py"] = spec["grader_source"]
    return dict(sorted(files.items()))

"""Hostile zips are refused with a message naming the entry, before anything is written."""

from __future__ import annotations

import html
import io
import stat
import zipfile

import pytest

from authoring import lab_zip
from authoring.models import AuthoringEvent, LabDraft
from labs.models import Lab

pytestmark = pytest.mark.django_db


GOOD = {"lab.yaml": "slug: x\n", "program/main.py": "print(1)\n"}


def make_zip(entries: dict[str, bytes | str], symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("lab/lab.yaml", "slug: lab\n")
        archive.writestr("lab/program/main.py", "#" * (lab_zip.MAX_FILE_BYTES * 2))
    return buffer.getvalue()


HOSTILE = {
    "traversal": (make_zip({"lab/lab.yaml": "x", "lab/../../etc/cron.d/x": "x"}), "'..' would leave the lab folder"),
    "absolute": (make_zip({"lab.yaml": "x", "/etc/passwd": "x"}), "absolute paths are not allowed"),
    "windows drive": (make_zip({"lab.yaml": "x", "C:/evil.py": "x"}), "absolute paths are not allowed"),
    "symlink": (make_zip({"lab/lab.yaml": "x"}, symlink="lab/program/main.py"), "symbolic links are not allowed"),
    "too many files": (
        make_zip({"lab.yaml": "x", **{f"program/f{i}.py": "x" for i in range(lab_zip.MAX_FILES + 1)}}),
        "at most 80 files",
    ),
    "too large": (bomb(), "the limit is"),
    "too much in all": (
        make_zip({"lab.yaml": "x", **{f"program/f{i}.py": "#" * 200_000 for i in range(12)}}),
        "unpack to more than",
    ),
    "binary": (make_zip({"lab.yaml": "x", "program/model.pt": b"\x80\x00\x01"}), "binary files are not allowed"),
    "not utf-8": (make_zip({"lab.yaml": "x", "program/main.py": "café".encode("latin-1")}), "not UTF-8 text"),
    "stray file": (make_zip({"lab.yaml": "x", "setup.sh": "rm -rf /"}), "only lab.yaml and grader.py"),
    "not a zip": (b"PK\x03\x04 but not really", "not a zip file"),
    "no lab.yaml": (make_zip({"program/main.py": "x"}), "lab.yaml: missing"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_zip_is_refused_by_the_service(case):
    data, message = HOSTILE[case]
    with pytest.raises(lab_zip.LabFilesError, match=message):
        lab_zip.read_zip(data)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_upload_is_refused_with_a_clear_message_and_writes_nothing(case, author, login, tmp_path):
    data, message = HOSTILE[case]
    client = login(author)
    upload = io.BytesIO(data)
    upload.name = "lab.zip"
    drafts, labs, events = LabDraft.objects.count(), Lab.objects.count(), AuthoringEvent.objects.count()
    response = client.post("/author/labs/new/", {"source": "zip", "zip": upload}, follow=True)
    assert response.status_code == 200
    assert message in html.unescape(response.content.decode())
    assert (LabDraft.objects.count(), Lab.objects.count(), AuthoringEvent.objects.count()) == (drafts, labs, events)


def test_a_zip_with_one_folder_or_files_at_the_top_reads_the_same():
    nested = lab_zip.read_zip(make_zip({f"lab/{k}": v for k, v in GOOD.items()}))
    flat = lab_zip.read_zip(make_zip(GOOD))
    assert nested == ("lab", GOOD) and flat == (None, GOOD)


def test_export_zip_is_deterministic():
    assert lab_zip.write_zip("x", GOOD) == lab_zip.write_zip("x", dict(reversed(GOOD.items())))


@pytest.mark.parametrize(
    "path", ["../x", "/abs", "program/../../x", "notes.md", "bad_fixes/main.py", "program/__pycache__/a.pyc", "a\\b"]
)
def test_draft_paths_stay_inside_the_lab_layout(path):
    with pytest.raises(lab_zip.LabFilesError):
        lab_zip.check_path(path)

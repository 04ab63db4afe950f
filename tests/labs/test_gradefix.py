"""``manage.py gradefix``: the reviewers' interface, graded through the real sandbox and grader."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from labs.models import LabRun, LabVersion
from labs.render import choose_params, render_files
from labs.services import hidden_files, program_for
from sandbox.models import Run
from tests.labs.helpers import EXAMPLE

pytestmark = pytest.mark.django_db

CHECK_KEYS = {"name", "type", "passed", "counts", "gate", "measured", "threshold", "source", "detail"}


def latest() -> LabVersion:
    return LabVersion.objects.filter(lab__slug=EXAMPLE).order_by("-number").first()


def fix_folder(tmp_path: Path, overlay: dict[str, str], seed: int) -> Path:
    """The overlay's files as a reviewer would hand them in: a folder of the files that change."""
    spec = latest().spec
    folder = tmp_path / "fix"
    for name, text in render_files(overlay, choose_params(spec["slug"], spec["params"], seed)).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def gradefix(*args: str) -> tuple[dict, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("gradefix", *args, stdout=out, stderr=err)
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1, out.getvalue()  # one JSON object, nothing else on stdout
    return json.loads(lines[0]), err.getvalue()


def assert_graded_as_a_submission(report: dict, seed: int, fix: dict[str, str]) -> LabRun:
    version = latest()
    spec = version.spec
    lab_run = LabRun.objects.select_related("run").get(kind=LabRun.Kind.FIX, attempt=None)
    run = lab_run.run
    expected = {**program_for(version, seed), **fix, **hidden_files(spec, seed)}
    assert run.files == expected and run.entry == spec["grade_entry"] and run.purpose == "grade"
    assert (run.timeout_seconds, run.memory_mb, run.ranks) == (
        spec["resources"]["timeout_seconds"], spec["resources"]["memory_mb"], spec["resources"]["ranks"]
    )  # fmt: skip
    assert lab_run.heldout_seed is not None and str(lab_run.heldout_seed) not in str(run.files)
    assert report["lab"] == EXAMPLE and report["version"] == version.number and report["seed"] == seed
    assert report["status"] == run.status and report["fix_percent"] == lab_run.fix_percent
    return lab_run


def test_gradefix_grades_a_fix_and_a_cover_up_like_submissions(tmp_path):
    spec = latest().spec
    folder = fix_folder(tmp_path, spec["solution"], seed=3)
    report, log = gradefix(EXAMPLE, "--seed", "3", "--files", str(folder), "--backend", "process")
    fix = {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}
    assert_graded_as_a_submission(report, 3, fix)
    assert report["passed"] is True and report["fix_percent"] == 100 and report["status"] == "passed"
    assert "error" not in report and report["validated"] is False
    assert "has not been validated" in log and "grading nan-lr-unnormalised" in log
    assert [c["name"] for c in report["checks"]] == [c["name"] for c in spec["checks"]]
    for check in report["checks"]:
        assert set(check) == CHECK_KEYS and check["source"] and check["measured"] and check["threshold"]
        if check["type"] in ("loss_finite", "counter"):
            assert check["counts"] == "display" and check["source"] == "reported by the program"
    # Not validated: the faulty program ran first on the same seed, and what it failed is what counts.
    counts = {check["name"]: check["counts"] for check in report["checks"]}
    assert counts["heldout"] == "distinguishing" and counts["exit-ok"] == "precondition", counts
    assert "running its faulty program on seed 3 first" in log

    LabRun.objects.all().delete()
    folder = fix_folder(tmp_path / "bad", spec["bad_fixes"]["tiny-lr"], seed=3)
    report, _ = gradefix(EXAMPLE, "--seed", "3", "--files", str(folder), "--backend", "process")
    assert report["passed"] is False and report["status"] == "failed" and report["fix_percent"] < 100
    assert {c["name"]: c["passed"] for c in report["checks"]}["heldout"] is False


@pytest.mark.docker
def test_gradefix_in_docker(tmp_path):
    folder = fix_folder(tmp_path, latest().spec["solution"], seed=1)
    report, _ = gradefix(EXAMPLE, "--seed", "1", "--files", str(folder), "--backend", "docker")
    fix = {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}
    lab_run = assert_graded_as_a_submission(report, 1, fix)
    assert lab_run.run.backend == "docker"
    assert report["passed"] is True and report["fix_percent"] == 100, report


@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        (lambda d: (d / "data.bin").write_text("x"), (), "files[data.bin]: only text files"),
        (lambda d: (d / "w.py").write_bytes(b"\xff\xfe"), (), "w.py is not UTF-8 text"),
        (lambda d: (d / "link.py").symlink_to("/etc/passwd"), (), "link.py is a symbolic link"),
        (lambda d: None, ("--seed", "-1"), "--seed must be 0–2147483647"),
        (lambda d: None, ("--lab", "no-such-lab"), "unknown lab 'no-such-lab'"),
    ],
)
def test_input_errors_exit_2_with_one_line(tmp_path, make, args, message):
    folder = tmp_path / "fix"
    folder.mkdir()
    (folder / "train.py").write_text("print('hi')\n")
    make(folder)
    options = dict(zip(args[::2], args[1::2], strict=True))
    lab = options.pop("--lab", EXAMPLE)
    seed = options.pop("--seed", "0")
    with pytest.raises(CommandError) as caught:
        gradefix(lab, "--seed", seed, "--files", str(folder), "--backend", "process")
    assert caught.value.returncode == 2
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not Run.objects.exists()


def test_a_platform_error_prints_the_json_and_exits_3(tmp_path):
    folder = fix_folder(tmp_path, latest().spec["solution"], seed=0)

    def worker_lost(run_id, worker_name=None):
        Run.transition(run_id, [Run.Status.QUEUED], Run.Status.ERROR, error_message="the worker died (test)")
        return "error"

    out = io.StringIO()
    with mock.patch("labs.management.commands.gradefix.execute_run", worker_lost), pytest.raises(SystemExit) as exit_:
        call_command("gradefix", EXAMPLE, "--seed", "0", "--files", str(folder), stdout=out, stderr=io.StringIO())
    assert exit_.value.code == 3
    report = json.loads(out.getvalue())
    assert report["status"] == "error" and report["error"] == "the worker died (test)" and report["passed"] is None


def test_usage_errors_exit_2_from_the_command_line():
    env = {**os.environ, "FAULTLINE_VAR_DIR": str(settings.VAR_DIR)}
    done = subprocess.run(
        [sys.executable, "manage.py", "gradefix", EXAMPLE, "--files", "."], cwd=settings.BASE_DIR, env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "--seed" in done.stderr and done.stdout == ""

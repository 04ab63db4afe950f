"""Fixes stored as patches against program/: the loader applies them, and a patch that no longer fits the
program is refused with the patch, the hunk and the line named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from labs.patches import PatchError, apply_patch, make_patch
from labs.spec import CATALOG_DIR, LabSpecError, load_lab

PROGRAM = "".join(f"line {n}\n" for n in range(1, 21))
LAB = CATALOG_DIR / "nan-lr-unnormalised"


@pytest.mark.parametrize(
    "changed",
    [
        PROGRAM.replace("line 3\n", "line three\n"),
        PROGRAM.replace("line 10\n", "line 10\nadded\n").replace("line 18\n", ""),
        "first\n" + PROGRAM,
        PROGRAM + "last\n",
        PROGRAM.rstrip("\n"),  # ends without a newline
        "",
    ],
)
def test_a_made_patch_turns_the_program_into_the_fix(changed):
    assert apply_patch(PROGRAM, make_patch(PROGRAM, changed, "train.py")) == changed


def test_a_patch_from_diff_u_applies():
    patch = "--- a/train.py\n+++ b/train.py\n@@ -2,3 +2,3 @@\n line 2\n-line 3\n+line three\n line 4\n"
    assert apply_patch(PROGRAM, patch) == PROGRAM.replace("line 3\n", "line three\n")


@pytest.mark.parametrize(
    ("patch", "problem"),
    [
        ("@@ -2,3 +2,3 @@\n line 2\n-line 30\n+x\n line 4\n",
         "hunk 1: line 3 of the program should be 'line 30', found 'line 3'"),
        ("--- a\n+++ b\n", "no hunk"),
        ("hello\n@@ -1 +1 @@\n-line 1\n+x\n", "expected a diff header or a hunk"),
        ("@@ -1 +1 @@\n-line 1\n+x\n@@ -40,1 +40,1 @@\n-a\n+b\n", "hunk 2: starts at line 40"),
        ("@@ -1 +1 @@\n*line 1\n", "starts with '*'"),
    ],
)  # fmt: skip
def test_a_patch_that_does_not_fit_says_where(patch, problem):
    with pytest.raises(PatchError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        apply_patch(PROGRAM, patch)


def test_the_catalog_stores_fixes_as_patches_and_loads_them_whole():
    spec = load_lab(LAB)
    assert (LAB / "bad_fixes" / "tiny-lr" / "train.py.patch").is_file()
    assert not (LAB / "bad_fixes" / "tiny-lr" / "train.py").exists()
    fixed = spec.bad_fixes["tiny-lr"]["train.py"]
    assert fixed != spec.program["train.py"] and "import" in fixed  # a whole program, not a diff
    assert set(spec.solution) == {"train.py"}


@pytest.fixture
def lab_copy(tmp_path) -> Path:
    target = tmp_path / LAB.name
    shutil.copytree(LAB, target)
    return target


def test_a_patch_the_program_outgrew_is_refused_by_name(lab_copy):
    train = lab_copy / "program" / "train.py"
    text = train.read_text(encoding="utf-8")
    train.write_text(text.replace("lr={{lr}}, momentum=0.9)", "lr={{lr}}, momentum=0.8)", 1), encoding="utf-8")
    with pytest.raises(LabSpecError) as caught:
        load_lab(lab_copy)
    assert caught.value.path.endswith(".patch")
    assert "does not apply to program/train.py: hunk" in caught.value.problem


def test_a_patch_without_its_program_file_or_beside_the_whole_file_is_refused(lab_copy):
    fix = lab_copy / "bad_fixes" / "tiny-lr"
    (fix / "train.py").write_text("print('whole')\n", encoding="utf-8")
    with pytest.raises(LabSpecError, match="both train.py and train.py.patch"):
        load_lab(lab_copy)
    (fix / "train.py").unlink()
    (fix / "train.py.patch").rename(fix / "other.py.patch")
    with pytest.raises(LabSpecError, match="patches program/other.py, which does not exist"):
        load_lab(lab_copy)

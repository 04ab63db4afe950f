"""Drafts: made from scratch, a copy or a zip; saved with optimistic locking; checked by the loadlabs parser
with errors placed at their file and line."""

from __future__ import annotations

import pytest

from authoring import lab_drafts
from authoring.lab_drafts import DraftRefused, StaleDraft
from authoring.models import AuthoringEvent
from labs.models import Lab
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def test_a_draft_from_scratch_passes_the_parser(author):
    draft = lab_drafts.create_from_scratch(author, "correctness-tiny")
    assert sorted(draft.files) == ["lab.yaml", "program/main.py", "solution/main.py"]
    assert lab_drafts.check(draft.slug, draft.files) == []
    assert AuthoringEvent.objects.filter(kind="created", slug="correctness-tiny", actor=author).exists()


def test_a_new_lab_needs_a_fresh_valid_slug(author):
    with pytest.raises(DraftRefused, match="exists already"):
        lab_drafts.create_from_scratch(author, "nan-lr-unnormalised")
    with pytest.raises(DraftRefused, match="lowercase words"):
        lab_drafts.create_from_scratch(author, "Bad Slug")


def test_a_copy_keeps_the_catalog_folder_as_written(author):
    lab = Lab.objects.get(slug="correctness-missing-eval")
    version = lab.versions.order_by("-number").first()
    draft = lab_drafts.create_from_version(author, version)
    assert draft.lab == lab and draft.based_on == version
    assert "# Pass/fail comes from exit codes" in draft.files["lab.yaml"]  # comments survive
    # The cover-up is stored as what it changes in predict.py (a patch), and the copy keeps it so.
    assert "grader.py" in draft.files and "bad_fixes/dropout-off/predict.py.patch" in draft.files
    assert lab_drafts.parse_files(draft.slug, draft.files).content_hash() == version.content_hash


def test_a_stale_save_is_refused_naming_who_saved_and_keeps_nothing_of_it(author):
    other = make_user("coauthor")
    draft = lab_drafts.create_from_scratch(author, "correctness-tiny")
    opened_at = draft.revision
    theirs = {**draft.files, "program/main.py": "# theirs\n"}
    lab_drafts.save_draft(draft, theirs, opened_at, other)
    mine = {**draft.files, "program/main.py": "# mine\n"}
    with pytest.raises(StaleDraft, match="coauthor saved this draft at .* \\(revision 2\\)"):
        lab_drafts.save_draft(draft, mine, opened_at, author)
    draft.refresh_from_db()
    assert draft.files["program/main.py"] == "# theirs\n" and draft.revision == 2


def test_files_are_added_renamed_and_deleted(author):
    draft = lab_drafts.create_from_scratch(author, "correctness-tiny")
    draft = lab_drafts.add_file(draft, "program/util.py", draft.revision, author, "X = 1\n")
    draft = lab_drafts.rename_file(draft, "program/util.py", "program/helpers.py", draft.revision, author)
    assert draft.files["program/helpers.py"] == "X = 1\n" and "program/util.py" not in draft.files
    draft = lab_drafts.delete_file(draft, "program/helpers.py", draft.revision, author)
    assert "program/helpers.py" not in draft.files
    with pytest.raises(DraftRefused, match="not part of a lab folder"):
        lab_drafts.add_file(draft, "notes/todo.txt", draft.revision, author)
    with pytest.raises(DraftRefused, match="cannot be deleted"):
        lab_drafts.delete_file(draft, "lab.yaml", draft.revision, author)
    assert AuthoringEvent.objects.filter(kind="edited", slug="correctness-tiny").count() == 3


def with_yaml(draft, old: str, new: str) -> dict:
    assert old in draft.files["lab.yaml"]
    return {**draft.files, "lab.yaml": draft.files["lab.yaml"].replace(old, new)}


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_bad_parameter_range_is_placed_on_its_line(author):
    draft = lab_drafts.create_from_scratch(author, "correctness-tiny")
    files = with_yaml(draft, "count: {int: [10, 1000]}", "count: {int: [1000, 10]}")
    [problem] = lab_drafts.check(draft.slug, files)
    assert problem.file == "lab.yaml" and problem.where == "params.count.int"
    assert problem.line == line_of(files["lab.yaml"], "count: {int")
    assert "low <= high" in problem.problem


def test_a_yaml_syntax_error_names_its_line(author):
    draft = lab_drafts.create_from_scratch(author, "correctness-tiny")
    files = with_yaml(draft, "difficulty: 1", "difficulty: [1")
    [problem] = lab_drafts.check(draft.slug, files)
    assert problem.file == "lab.yaml" and problem.line is not None and "not valid YAML" in problem.problem


def test_an_undeclared_placeholder_names_the_program_file_and_line(author):
    draft = lab_drafts.create_from_scratch(author, "correctness-tiny")
    files = {**draft.files, "program/main.py": "x = 1\ny = {{ steps }}\n"}
    [problem] = lab_drafts.check(draft.slug, files)
    assert (problem.file, problem.line) == ("program/main.py", 2)
    assert "not a declared parameter" in problem.problem


def test_a_check_option_error_points_into_the_checks_list(author):
    draft = lab_drafts.create_from_scratch(author, "correctness-tiny")
    files = with_yaml(
        draft, "{name: exit-ok, type: ranks_exit_zero}", "{name: exit-ok, type: ranks_exit_zero, gate: maybe}"
    )
    [problem] = lab_drafts.check(draft.slug, files)
    assert problem.line == line_of(files["lab.yaml"], "exit-ok")


def test_unknown_questions_are_refused_like_loadlabs(author):
    draft = lab_drafts.create_from_scratch(author, "correctness-tiny")
    files = with_yaml(draft, "entry: main.py", "questions: [no-such-question]\nentry: main.py")
    [problem] = lab_drafts.check(draft.slug, files)
    assert problem.where == "questions" and problem.line == line_of(files["lab.yaml"], "questions:")


def test_locate_finds_nested_fields():
    text = "a:\n  b:\n    - x: 1\n    - y: 2\n"
    assert lab_drafts.locate(text, "a.b[1].y") == 4
    assert lab_drafts.locate(text, "a.b[1].z") == 4  # the deepest part that exists
    assert lab_drafts.locate(text, "nothing") is None

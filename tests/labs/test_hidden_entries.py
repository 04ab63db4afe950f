"""Every graded run's hidden entry takes the program's folder off sys.path before it imports anything, so no
file of the candidate's can stand in for a module the entry needs (the behaviour itself is tested with the
launcher in tests/sandbox/harness/test_gradedentry.py)."""

from __future__ import annotations

import ast

import pytest

from labs.spec import CATALOG_DIR, load_lab

ENTRIES = [
    (folder.name, spec.grade_entry)
    for folder in sorted(CATALOG_DIR.iterdir())
    if (folder / "lab.yaml").is_file()
    for spec in [load_lab(folder)]
    if spec.grade_entry in spec.hidden
]
PROLOGUE = ast.parse(
    "import os\n"
    "import sys\n"
    "PROGRAM_DIR = sys.path[0]\n"
    "sys.path[:] = [p for p in sys.path if os.path.realpath(p or '.') != os.path.realpath(PROGRAM_DIR)]\n"
).body


def test_the_catalog_has_hidden_entries():
    assert len(ENTRIES) >= 10


@pytest.mark.parametrize(("slug", "entry"), ENTRIES)
def test_a_hidden_entry_starts_by_taking_the_program_folder_off_sys_path(slug, entry):
    source = load_lab(CATALOG_DIR / slug).hidden[entry].replace("{{", "(").replace("}}", ")")
    body = ast.parse(source).body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    assert [ast.dump(node) for node in body[: len(PROLOGUE)]] == [ast.dump(node) for node in PROLOGUE]
    runs = [
        node for node in ast.walk(ast.Module(body=body, type_ignores=[]))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "run_program"
    ]  # fmt: skip
    assert runs and all(ast.unparse(call.args[0]) == "PROGRAM_DIR" for call in runs)

"""A graded run's hidden entry: what it notes runs before the candidate's code, and none of the
candidate's files can stand in for a module it imports (they share its folder, first on sys.path)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import torch
from faultline_harness import gradedentry, sealedrecords

from .conftest import start_launcher

# A candidate's module named like one of the standard library's: if it is ever imported in place of the
# real one, it leaves a mark in the output folder.
SHADOW = """
import os
open(os.path.join(os.environ["FAULTLINE_OUTPUT_DIR"], "shadowed-" + __name__), "w").close()
"""
TRAIN = """
import helper
print("trained with", helper.NAME)
"""

ENTRY = """
import os
import sys

PROGRAM_DIR = sys.path[0]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(PROGRAM_DIR)]

import colorsys  # nothing has imported it yet: whoever comes first on sys.path provides it
from faultline_harness.gradedentry import run_program

run_program(PROGRAM_DIR)
"""


def graded_folder(root: Path) -> Path:
    program = root / "program"
    program.mkdir(parents=True)
    for name in ("json.py", "colorsys.py"):
        (program / name).write_text(textwrap.dedent(SHADOW))
    (program / "train.py").write_text(textwrap.dedent(TRAIN))
    (program / "helper.py").write_text('NAME = "the candidate\'s helper"\n')
    return root


def test_the_candidates_files_cannot_stand_in_for_the_entrys_imports(tmp_path):
    run = start_launcher(graded_folder(tmp_path / "entry"), ENTRY)
    assert run.wait(60) == 0, run.snapshot()
    out = run.out_dir
    assert not list(out.glob("shadowed-*"))
    assert any("trained with the candidate's helper" in line for line in run.output(0))  # its folder is back


def test_without_the_prologue_a_candidate_module_would_run_first(tmp_path):
    # The control: the same entry without popping its folder imports the candidate's json.py.
    run = start_launcher(graded_folder(tmp_path / "plain"), ENTRY.replace("sys.path[:] = ", "_ = "))
    assert run.wait(60) == 0, run.snapshot()
    assert [p.name for p in run.out_dir.glob("shadowed-*")] == ["shadowed-colorsys"]


def test_the_harness_starts_every_rank_with_its_own_modules(tmp_path):
    # A plain run: the rank runtime, which Python starts before the program, imports json (and more)
    # from the standard library, never from the program's folder.
    root = graded_folder(tmp_path / "plain-run")
    run = start_launcher(root, "print('ran')\n")
    assert run.wait(60) == 0, run.snapshot()
    assert not list(run.out_dir.glob("shadowed-*"))
    assert run.output(0) == ["ran"]


def test_loader_workers_are_noted_per_batch(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULTLINE_OUTPUT_DIR", str(tmp_path))
    loader = torch.utils.data.DataLoader(torch.arange(10), batch_size=4, num_workers=0)
    with gradedentry.LoaderWorkers() as workers:
        iterator = iter(loader)
        assert len(iterator) == 3  # still the DataLoader's own iterator underneath
        assert [len(batch) for batch in iterator] == [4, 4, 2]
    workers.save()
    assert torch.utils.data.DataLoader.__iter__ is not None and workers.per_batch == [0, 0, 0]
    probe = torch.load(tmp_path / "loader-probe-rank0.pt", weights_only=True)
    assert int(probe["batches"]) == 3 and int(probe["min_workers"]) == 0
    assert [len(b) for b in loader] == [4, 4, 2] and workers.per_batch == [0, 0, 0]  # not noted once exited


def test_a_graded_runs_loader_note_is_sealed_and_outlives_a_rewrite(tmp_path, monkeypatch):
    keeper = sealedrecords.SealedRecords(tmp_path, ["loader-probe-rank{rank}.pt"])
    keeper.set_ranks({os.getpid(): (0, None)})
    keeper.start()
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("FAULTLINE_SEALED_RECORDS", str(keeper.path))
    monkeypatch.setenv("FAULTLINE_OUTPUT_DIR", str(out))
    try:
        with gradedentry.LoaderWorkers() as workers:
            assert [len(batch) for batch in torch.utils.data.DataLoader(torch.arange(6), batch_size=2)] == [2, 2, 2]
        workers.save()
        # What a program's atexit hook would do after the entry's last line.
        torch.save({"batches": torch.tensor(3), "min_workers": torch.tensor(2)}, out / "loader-probe-rank0.pt")
        keeper.restore(out)
    finally:
        keeper.stop()
    probe = torch.load(out / "loader-probe-rank0.pt", weights_only=True)
    assert int(probe["batches"]) == 3 and int(probe["min_workers"]) == 0

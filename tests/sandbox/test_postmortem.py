"""Post-mortem captures through the runner: a NaN lab's faulty program leaves its first-non-finite capture
and an exit memory snapshot in the run's tool output, labelled as reported by the program."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from labs.render import choose_params, render_files
from labs.spec import load_lab
from sandbox import runner, services
from sandbox.models import Run
from tests.sandbox.helpers import log_of

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), "process"]
LAB = "nan-input-rows"  # NaN rows in the input: the model's first Linear is the first non-finite output


@pytest.fixture(autouse=True)
def _db(db):
    pass


def faulty_program(slug: str, seed: int = 1) -> tuple[dict[str, str], str]:
    spec = load_lab(Path(django_settings.LAB_CATALOG_DIR) / slug)
    params = choose_params(slug, spec.params, seed)
    return render_files(spec.program, params), spec.entry


def run_lab_program(settings, backend: str, slug: str) -> Run:
    settings.SANDBOX_BACKEND = backend
    files, entry = faulty_program(slug)
    run = services.create_run(owner=None, files=files, entry=entry, timeout_seconds=120)
    runner.execute_run(run.pk)
    run.refresh_from_db()
    return run


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_lab_run_lists_first_non_finite_capture_and_exit_memory(settings, backend):
    run = run_lab_program(settings, backend, LAB)
    assert run.exit_code == 0, (run.error_message, log_of(run))
    outputs = {d.kind: d for d in run.diagnostics.all()}
    assert set(outputs) == {"nonfinite", "memory"}
    nonfinite = outputs["nonfinite"]
    assert nonfinite.status == "done"
    first_line, note = nonfinite.output.splitlines()[:2]
    assert first_line == "rank 0: first non-finite loss at step 0 in layer net.0 (Linear)"
    assert "inside the program" in note and "never used for grading" in note
    batch = nonfinite.output.split("## last batch", 1)[1].split("##", 1)[0]
    assert "input 0: shape 2048x10" in batch and "non-finite 0 of" not in batch
    assert "train.py" in nonfinite.output  # the rank's stack at the report
    memory = outputs["memory"].output
    assert "as it exited" in memory.splitlines()[0]
    assert "# memory snapshot: rank 0" in memory and "torch tensors reachable through gc" in memory
    # Telemetry from the rank is display: it is not among the run's events or output files.
    assert not run.events.filter(kind="postmortem").exists()
    assert all(not a.name.startswith(("first-nonfinite", "memory-rank")) for a in run.artifacts.all())
    assert "faultline-harness: first non-finite loss at step 0 in layer net.0 (Linear)" in log_of(run)


def test_postmortem_events_become_one_diagnostic_per_kind():
    captures = [
        {"kind": "postmortem", "what": "nonfinite", "rank": 1, "summary": "first non-finite loss at step 4 x",
         "text": "R1"},
        {"kind": "postmortem", "what": "memory_at_exit", "rank": 0, "text": "M0"},
        {"kind": "postmortem", "what": "nonfinite", "rank": 0, "summary": "first non-finite loss at step 3 y",
         "text": "R0"},
    ]  # fmt: skip
    found = dict(runner.postmortem_diagnostics(captures))
    assert found["nonfinite"].splitlines()[:2] == [
        "rank 0: first non-finite loss at step 3 y",
        "rank 1: first non-finite loss at step 4 x",
    ]
    assert found["nonfinite"].index("=== rank 0 ===\nR0") < found["nonfinite"].index("=== rank 1 ===\nR1")
    assert found["memory"].endswith("=== rank 0 ===\nM0")


def test_stream_keeps_postmortems_out_of_the_event_stream_and_caps_them():
    state = runner.StreamState(run_id=1)
    for rank in range(runner.POSTMORTEM_CAP + 5):
        event = {"kind": "postmortem", "what": "memory_at_exit", "rank": rank, "text": "m"}
        state.add_line("@@fl " + json.dumps(event))
    state.add_line('@@fl {"kind":"postmortem","what":"made-up","rank":0,"text":"x"}')
    assert len(state.postmortems) == runner.POSTMORTEM_CAP
    assert state.pending_events == [] and state.event_seq == 0

"""Validation prints how far each check sat from its threshold, and a README summary line per lab."""

from __future__ import annotations

from unittest import mock

import pytest
from django.core.management import call_command

from labs.validation import ValidationRow
from labs.validation_report import check_margins, margin_lines, summary_markdown


def row(variant: str, seed: int, margins: dict, ok: bool = True, lab: str = "nan-x") -> ValidationRow:
    expected = "pass" if variant == "solution" else "fail"
    failed = [name for name, m in margins.items() if m is not None and m < 0]
    return ValidationRow(
        lab=lab, version=1, seed=seed, variant=variant, expected=expected, outcome=expected, failed_checks=failed,
        seconds=1.0, ok=ok, margins=margins,
    )  # fmt: skip


ROWS = [
    row("baseline", 0, {"heldout": -0.9, "exit-ok": None}),
    row("baseline", 1, {"heldout": -0.4, "exit-ok": None}),
    row("solution", 0, {"heldout": 0.3, "exit-ok": None}),
    row("solution", 1, {"heldout": 0.05, "exit-ok": None}),
    row("bad:clamp", 0, {"heldout": -0.2, "exit-ok": None}),
    row("bad:clamp", 1, {"heldout": None, "exit-ok": None}),  # crashed: nothing measured
]


def test_margins_take_the_reference_worst_seed_and_the_closest_faulty_and_cover_up_seeds():
    [heldout, exit_ok] = check_margins(ROWS)
    assert (heldout.check, heldout.reference_min, heldout.faulty_max, heldout.coverup_max) == (
        "heldout", 0.05, -0.4, -0.2,
    )  # fmt: skip
    assert (exit_ok.reference_min, exit_ok.faulty_max, exit_ok.coverup_max) == (None, None, None)
    lines = margin_lines(ROWS)
    assert "+5.0%" in lines[1] and "-40.0%" in lines[1] and "-20.0%" in lines[1]
    assert lines[2].split()[1:] == ["—", "—", "—"]


def test_summary_names_each_lab_its_runs_violations_and_tightest_reference_check():
    rows = [
        *ROWS,
        row("baseline", 0, {"speedup": -0.5}, lab="perf-y"),
        row("solution", 0, {"speedup": 0.2}, ok=False, lab="perf-y"),
    ]
    text = summary_markdown(rows, seeds=2)
    assert "| `nan-x` | `clamp` | heldout | 1–1 s | heldout +5.0% | heldout -20.0% | 0 |" in text
    assert "| `perf-y` | — | speedup | 1–1 s | speedup +20.0% | — | 1 |" in text
    assert text.endswith("2 labs, 8 runs, 1 violation(s).")


@pytest.mark.django_db
def test_validatelab_prints_margins_after_each_lab_and_the_summary_on_request(capsys):
    with mock.patch(
        "labs.management.commands.validatelab.validate_version",
        side_effect=lambda version, seeds, progress: [
            row(r.variant, r.seed, r.margins, lab=version.lab.slug) for r in ROWS
        ],
    ):
        call_command("validatelab", "nan-fp16-log-epsilon", "--seeds", "2", "--summary")
    out = capsys.readouterr().out
    assert "nan-fp16-log-epsilon: margins from the threshold" in out
    assert "| `nan-fp16-log-epsilon` | `clamp` | heldout | 1–1 s | heldout +5.0% | heldout -20.0% | 0 |" in out


def test_margins_far_from_a_tiny_threshold_stay_short():
    from labs.validation_report import format_margin

    assert format_margin(0.125) == "+12.5%" and format_margin(-0.4) == "-40.0%"
    assert format_margin(-1e14) == "-1.0e+16%" and format_margin(None) == "—"

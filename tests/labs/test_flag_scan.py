"""Static review flags are searched in a child process, so no pattern can stall the worker."""

from __future__ import annotations

import time

from labs.flag_scan import TIMED_OUT_FLAG, static_flags

CLIPPING = r"clip_grad_norm_\(.*(max_norm\s*=\s*[0-9.]+|,\s*[0-9.]+\s*\))"


def flag(pattern: str, mode: str = "pattern") -> dict:
    return {"pattern": pattern, "mode": mode, "en": f"en {pattern}", "zh": f"zh {pattern}"}


def test_found_and_absent_patterns_are_reported_with_their_texts():
    spec = {"static_flags": [flag("nan_to_num"), flag(r"all_reduce\(", "absent"), flag("gc\\.collect")]}
    files = {"train.py": "loss = torch.nan_to_num(loss)\n", "util.py": "import os\n"}
    found = static_flags(spec, files)
    assert [(f["pattern"], f["mode"]) for f in found] == [("nan_to_num", "pattern"), (r"all_reduce\(", "absent")]
    assert found[0]["en"] == "en nan_to_num" and found[0]["zh"] == "zh nan_to_num"


def test_patterns_can_match_across_files_and_lines():
    spec = {"static_flags": [flag(r"^def predict\(")]}
    assert static_flags(spec, {"a.py": "x = 1", "b.py": "def predict(x):\n    return x\n"})


def test_a_lab_without_flags_starts_no_process():
    assert static_flags({"static_flags": []}, {"train.py": "nan_to_num"}) == []


def test_a_pattern_that_backtracks_for_minutes_ends_as_a_flag_for_a_human_read():
    # One 256 KB line of a repeated call: this pattern scans the rest of the line from every start.
    hostile = {"train.py": "clip_grad_norm_(" * 16_000}
    started = time.monotonic()
    found = static_flags({"static_flags": [flag(CLIPPING)]}, hostile, timeout=1.0)
    assert time.monotonic() - started < 5
    assert found == [TIMED_OUT_FLAG]
    # The same pattern on ordinary code answers normally.
    ordinary = {"train.py": "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"}
    assert [f["pattern"] for f in static_flags({"static_flags": [flag(CLIPPING)]}, ordinary)] == [CLIPPING]

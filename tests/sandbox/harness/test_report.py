"""The report API and line helpers, in-process (no launcher, no torch)."""

from __future__ import annotations

import json
import math
import threading

import numpy as np
import pytest
from faultline_harness import report
from faultline_harness.launch import LINE_CAP, TRUNCATED_SUFFIX, LineSplitter, split_utf8
from faultline_harness.protocol import decode, encode, jsonable


def _telemetry(captured: str) -> list[dict]:
    events = []
    for line in captured.splitlines():
        event = decode(line)
        assert event is not None, f"not a telemetry line: {line!r}"
        events.append(event)
    return events


def test_step_outside_the_launcher_prints_plain_telemetry(capfd) -> None:
    report.step(4, loss=np.float32("nan"), grad_norm=float("-inf"), throughput=np.int64(128), acc=0.25)
    report.metric("val_loss", float("inf"), step=4)
    report.metric("note", "warmup")
    events = _telemetry(capfd.readouterr().out)
    assert events == [
        {"kind": "metric", "step": 4, "loss": "nan", "grad_norm": "-inf", "throughput": 128, "acc": 0.25},
        {"kind": "metric", "name": "val_loss", "value": "inf", "step": 4},
        {"kind": "metric", "name": "note", "value": "warmup"},
    ]


def test_reserved_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="reserved"):
        report.step(1, kind="oops")


def test_lines_stay_whole_under_concurrent_reporting(capfd) -> None:
    def spam(worker: int) -> None:
        for i in range(200):
            report.metric(f"w{worker}", i, step=i)

    threads = [threading.Thread(target=spam, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = _telemetry(capfd.readouterr().out)
    assert len(events) == 800


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        (-math.inf, "-inf"),
        (np.float64(2.5), 2.5),
        (np.bool_(True), True),
        ([1.0, float("nan")], [1.0, "nan"]),
        (np.array([1.0, 2.0]), "[1. 2.]"),
        (None, None),
    ],
)
def test_jsonable(value, expected) -> None:
    assert jsonable(value) == expected
    json.dumps(jsonable(value), allow_nan=False)


def test_encode_is_compact_and_strict() -> None:
    line = encode({"kind": "metric", "loss": float("nan")})
    assert line == '@@fl {"kind":"metric","loss":"nan"}'


def test_split_utf8_never_cuts_a_character() -> None:
    data = ("é" * 10).encode()
    assert split_utf8(data, 5).decode() == "éé"
    assert split_utf8(data, 6).decode() == "ééé"
    assert split_utf8(b"abc", 10) == b"abc"


def test_line_splitter_caps_and_resynchronises() -> None:
    lines: list[tuple[bytes, bool]] = []
    splitter = LineSplitter(lambda raw, cut: lines.append((raw, cut)), allow_telemetry=True)
    splitter.feed(b"one\ntw")
    splitter.feed(b"o\n" + b"x" * (LINE_CAP + 10))
    splitter.feed(b"x" * 100 + b"\nthree")
    splitter.close()
    assert [(raw[:5], cut) for raw, cut in lines] == [
        (b"one", False),
        (b"two", False),
        (b"xxxxx", True),
        (b"three", False),
    ]
    assert TRUNCATED_SUFFIX.startswith("…")

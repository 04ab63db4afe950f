"""``scoreanswer`` and ``scorediagnosis``: the JSON interface reviewers use to audit the scorer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def manage(*args: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, input=stdin, capture_output=True, text=True, timeout=120
    )


def test_scoreanswer_prints_each_point_with_its_evidence():
    answer = (
        "The learning rate is too high for these raw inputs, so the loss explodes and turns NaN. "
        "Check every batch with torch.isfinite before it reaches the model."
    )
    done = manage("scoreanswer", "nan-loss-checklist", "--lang", "zh", stdin=answer)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["question"] == "nan-loss-checklist" and 0 < report["score"] < 100
    points = {p["key"]: p for p in report["points"]}
    assert set(points["learning-rate"]) == {
        "key", "label", "state", "fraction", "weight", "found", "listed", "missing", "evidence", "misconception",
        "denied",
    }  # fmt: skip
    assert points["learning-rate"]["state"] in ("found", "partly found")
    assert points["learning-rate"]["evidence"][0].startswith("The learning rate is too high")
    assert any("\u4e00" <= ch <= "\u9fff" for ch in points["learning-rate"]["label"])  # --lang zh
    assert all(p["state"] == "missed" for p in report["points"] if not p["found"] and not p["listed"])


@pytest.mark.parametrize(
    ("lang", "keywords"),
    [
        ("en", "learning rate; isnan; GradScaler; bf16; clip_grad_norm_"),
        # The keyword list of issue 13, in both languages: it must score 30 or less.
        ("en", "learning rate lower; input data isnan; fp16 GradScaler bf16; log eps softmax; gradient norm "
               "clipping; detect_anomaly hook"),
        ("zh", "学习率 降低；输入数据 检查 nan；半精度 损失缩放 bf16；对数 除零 softmax；梯度范数 裁剪；"
               "detect_anomaly 钩子"),
    ],
)  # fmt: skip
def test_scoreanswer_shows_a_keyword_list_for_what_it_is(lang, keywords):
    done = manage("scoreanswer", "nan-loss-checklist", "--lang", lang, stdin=keywords)
    report = json.loads(done.stdout)
    assert report["score"] <= 30, report["score"]
    assert all(not p["found"] for p in report["points"]) and any(p["listed"] for p in report["points"])


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["scoreanswer", "no-such-question"], "text", "no question 'no-such-question'"),
        (["scoreanswer", "nan-loss-checklist"], "   ", "no answer on stdin"),
        (["scorediagnosis", "no-such-lab", "--seed", "1", "--cause", "x"], "text", "no lab 'no-such-lab'"),
        (["scorediagnosis", "hang-ddp-uneven-inputs", "--seed", "1", "--cause", "x"], "text", "is not one of"),
        (["scorediagnosis", "hang-ddp-uneven-inputs", "--seed", "-1", "--cause", "x"], "text", "0 or more"),
    ],
)
def test_bad_input_exits_2_saying_what_was_wrong(args, stdin, message):
    done = manage(*args, stdin=stdin)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_scorediagnosis_scores_cause_and_evidence():
    from labs.render import choose_params
    from labs.spec import CATALOG_DIR, load_lab

    spec = load_lab(CATALOG_DIR / "hang-ddp-uneven-inputs").as_json()
    own = choose_params(spec["slug"], spec["params"], 3)  # the variant's facts, quoted as its log shows them
    evidence = (
        "One rank waits in barrier while the other is blocked in backward, and the step counts differ. "
        f"One rank reads {own['long_rows']} rows and the other only {own['short_rows']} rows. "
        "The parts are uneven, so that rank's extra all-reduce has no partner; Join fixes it."
    )
    right = json.loads(manage("scorediagnosis", "hang-ddp-uneven-inputs", "--seed", "3", "--cause",
                              "uneven-inputs", stdin=evidence).stdout)  # fmt: skip
    wrong = json.loads(manage("scorediagnosis", "hang-ddp-uneven-inputs", "--seed", "3", "--cause",
                              "save-race", stdin=evidence).stdout)  # fmt: skip
    assert right["root_cause_correct"] and not wrong["root_cause_correct"]
    assert right["score"] - wrong["score"] == 50 and right["seed"] == 3
    assert right["evidence_percent"] >= 80 and all(p["evidence"] for p in right["points"] if p["found"])


def test_scoreanswer_applies_misconceptions_like_the_practice_page():
    wrong = "Compared to GPipe, 1F1B reduces the bubble because it interleaves forward and backward passes."
    report = json.loads(manage("scoreanswer", "pipeline-parallel-bubbles", stdin=wrong).stdout)
    [point] = [p for p in report["points"] if p["key"] == "gpipe-vs-1f1b"]
    assert point["state"] == "contradicted" and point["fraction"] == 0
    assert point["misconception"]["sentence"].startswith("Compared to GPipe, 1F1B reduces the bubble")
    assert "does not shrink the bubble" in point["misconception"]["en"]

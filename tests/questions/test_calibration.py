"""Calibration files: every answer with a known grade scores inside its band, and malformed files are refused.

The parametrised test covers the calibration files present in the bank; how many questions have one is
reported by ``manage.py calibration`` (its summary line), not asserted here.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from questions.bankfile import (
    BankFileError,
    MisconceptionSpec,
    RubricPointSpec,
    iter_question_files,
    load_topics,
    parse_question,
)
from questions.calibration import (
    iter_calibration_files,
    parse_calibration,
    score_question,
    slug_of,
)

REPO = Path(__file__).resolve().parents[2]
TOPICS = {t.slug for t in load_topics()}


def bank_specs() -> dict:
    return {spec.slug: spec for spec in (parse_question(p, TOPICS) for p in iter_question_files())}


SPECS = bank_specs()


@pytest.mark.parametrize("path", iter_calibration_files(), ids=slug_of)
def test_every_calibration_answer_scores_in_its_band(path):
    calibration = parse_calibration(path, SPECS)
    rows = score_question(SPECS[calibration.slug], calibration)
    out = [(r.index, r.kind, r.lang, r.point, r.score, r.band, r.misconception_fired) for r in rows if not r.ok]
    assert not out, f"{path.name}: out of band (index, kind, lang, point, score, band, fired): {out}"


NAN = "nan-loss-checklist"
# The bank's rubrics are being revised; the unit tests below pin their own rubric on the real question's
# file path so that they test the loader and the bands, not today's wording of the bank.
RUBRIC = [
    RubricPointSpec(
        key="learning-rate", weight=3, text={"en": "lr", "zh": "学习率"},
        concepts=[["learning rate", "lr", "学习率"], ["lower", "reduce", "降低"]],
        misconceptions=[MisconceptionSpec(pattern=[["learning rate", "学习率"], ["raise", "提高"]],
                                          explanation={"en": "Lower it.", "zh": "应降低。"})],
    ),
    RubricPointSpec(key="dirty-data", weight=2, text={"en": "data", "zh": "数据"},
                    concepts=[["isnan", "isfinite"], ["batch", "输入"]]),
    RubricPointSpec(key="clipping", weight=1, text={"en": "clip", "zh": "裁剪"},
                    concepts=[["gradient clipping", "clip_grad_norm_", "梯度裁剪"]]),
]  # fmt: skip
UNIT_SPECS = {NAN: replace(SPECS[NAN], rubric=RUBRIC)}
VALID = {
    "answers": [
        {"kind": "good", "lang": "en", "text": "The learning rate is too high, so lower it tenfold."},
        {"kind": "good", "lang": "zh", "text": "学习率过大，把它降低十倍。"},
        {"kind": "keywords", "lang": "en", "text": "lr; isnan; GradScaler"},
        {"kind": "keywords", "lang": "zh", "text": "学习率；isnan；GradScaler"},
        {"kind": "misconception", "lang": "en", "point": "learning-rate", "text": "Raise the learning rate."},
        {"kind": "misconception", "lang": "zh", "point": "learning-rate", "text": "我会把学习率提高一倍来加快收敛。"},
        {"kind": "off-topic", "lang": "en", "text": "Kubernetes schedules pods onto nodes."},
        {"kind": "off-topic", "lang": "zh", "text": "Kubernetes 把 Pod 调度到节点上。"},
    ]
}


def write(tmp_path: Path, data: object, slug: str = NAN, folder: str = "numerics") -> Path:
    path = tmp_path / folder / f"{slug}.calibration.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def with_entry(index: int, **changes) -> dict:
    answers = [dict(a) for a in VALID["answers"]]
    answers[index].update(changes)
    answers[index] = {k: v for k, v in answers[index].items() if v is not None}
    return {"answers": answers}


def test_a_valid_file_loads_with_every_entry_in_order(tmp_path):
    calibration = parse_calibration(write(tmp_path, VALID), UNIT_SPECS)
    assert calibration.slug == NAN
    assert [(a.index, a.kind, a.lang) for a in calibration.answers][:3] == [
        (0, "good", "en"), (1, "good", "zh"), (2, "keywords", "en")
    ]  # fmt: skip
    assert calibration.answers[4].point == "learning-rate"


@pytest.mark.parametrize(
    ("data", "where", "problem"),
    [
        (with_entry(3, kind="keyword"), "answers[3].kind", "must be one of good, keywords"),
        (with_entry(0, kind="reference"), "answers[0].kind", "references come from the question"),
        (with_entry(1, lang="fr"), "answers[1].lang", "must be one of en, zh"),
        (with_entry(6, text="   "), "answers[6].text", "is missing or empty"),
        (with_entry(2, score=20), "answers[2].score", "unknown key"),
        (with_entry(4, point=None), "answers[4].point", "must name the rubric point"),
        (with_entry(5, point="learning-rates"), "answers[5].point", "unknown rubric point 'learning-rates'"),
        (with_entry(0, point="learning-rate"), "answers[0].point", "only misconception answers name a point"),
        ({**VALID, "good_answers": []}, "good_answers", "unknown key"),
        ({"answers": []}, "answers", "non-empty list"),
        ({"answers": VALID["answers"][:-1]}, "answers", "needs at least one 'off-topic' answer with lang 'zh'"),
        ("answers: [\n  - kind: good\n", "line ", "not valid YAML"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_entry_and_field(tmp_path, data, where, problem):
    path = write(tmp_path, data)
    with pytest.raises(BankFileError) as caught:
        parse_calibration(path, UNIT_SPECS)
    assert caught.value.path == str(path) and caught.value.where.startswith(where), caught.value
    assert problem in caught.value.problem, caught.value


def test_a_file_for_no_question_or_in_the_wrong_folder_is_refused(tmp_path):
    with pytest.raises(BankFileError, match="no question with slug 'nan-loss-checklst'"):
        parse_calibration(write(tmp_path, VALID, slug="nan-loss-checklst"), UNIT_SPECS)
    with pytest.raises(BankFileError, match="in folder 'numerics'"):
        parse_calibration(write(tmp_path, VALID, folder="ascend"), UNIT_SPECS)


def test_rows_check_each_kind_against_its_band(tmp_path):
    spec = UNIT_SPECS[NAN]
    rows = score_question(spec, parse_calibration(write(tmp_path, VALID), UNIT_SPECS))
    assert [(r.kind, r.lang) for r in rows[:2]] == [("reference", "en"), ("reference", "zh")]
    assert all(r.ok for r in rows[:2]) and all(r.score >= 85 for r in rows[:2])
    by_index = {r.index: r for r in rows}
    # A one-sentence "good" answer covers one point of six: far below its band, so the row fails.
    assert not by_index[0].ok and by_index[0].score < 85 and by_index[0].band == ">= 85"
    assert by_index[2].ok and by_index[2].score <= 30
    # "Raise the learning rate" fires the point's misconception and leaves the point at 0.
    assert by_index[4].ok and by_index[4].misconception_fired and by_index[4].score == 0
    assert by_index[4].contradicted == ["learning-rate"]
    assert by_index[6].ok and by_index[6].score == 0


def test_a_misconception_answer_that_fires_nothing_is_out_of_band_even_at_zero(tmp_path):
    data = with_entry(4, text="The dataloader uses four workers.")
    rows = score_question(UNIT_SPECS[NAN], parse_calibration(write(tmp_path, data), UNIT_SPECS))
    row = next(r for r in rows if r.index == 4)
    assert row.score == 0 and not row.misconception_fired and not row.ok


def covered() -> int:
    return sum(spec.path.with_name(f"{spec.slug}.calibration.yaml").exists() for spec in SPECS.values())


def test_the_command_prints_one_row_per_answer_and_the_coverage():
    path = SPECS[NAN].path.with_name(f"{NAN}.calibration.yaml")
    entries = len(parse_calibration(path, SPECS).answers) if path.exists() else 0
    before = covered()
    done = subprocess.run(
        [sys.executable, "manage.py", "calibration", NAN, "--json"], cwd=REPO, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    report = json.loads(done.stdout)
    rows = report["rows"]
    assert {r["slug"] for r in rows} == {NAN} and len(rows) == 2 + entries
    assert [r["kind"] for r in rows[:2]] == ["reference", "reference"]
    assert report["summary"]["questions"] == 80
    # Other authors may add files while this runs; the count lies between the two looks.
    assert before <= report["summary"]["with_calibration_file"] <= covered()
    bad = report["summary"]["out_of_band"] + report["summary"]["invalid_files"]
    assert bad == sum(not r["ok"] for r in rows) + len(report["errors"])
    assert done.returncode == (1 if bad else 0), done.stderr

    table = subprocess.run(
        [sys.executable, "manage.py", "calibration", NAN], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["question", "#", "kind"]
    assert len(lines) == 1 + len(rows) + len(report["errors"]) + 1
    assert lines[-1].startswith("questions with calibration files:") and " of 80;" in lines[-1]


def test_the_command_refuses_an_unknown_slug():
    done = subprocess.run(
        [sys.executable, "manage.py", "calibration", "no-such-question"], cwd=REPO, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "no-such-question" in done.stderr


def test_the_command_exits_1_for_a_row_out_of_band(tmp_path, monkeypatch):
    """In-process, on the unit rubric and a file whose two one-sentence good answers are too thin."""
    from django.core.management import call_command

    from questions.management.commands import calibration as command_module

    path = write(tmp_path, VALID)
    monkeypatch.setattr(command_module, "parse_bank", lambda: ([], list(UNIT_SPECS.values())))
    monkeypatch.setattr(command_module, "calibration_path", lambda spec: path)
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("calibration", NAN, stdout=out)
    assert exited.value.code == 1
    lines = out.getvalue().splitlines()
    assert [line.split()[1:3] for line in lines if " OUT" in line] == [["0", "good"], ["1", "good"]]
    assert "rows out of band: 2" in lines[-1]


def test_the_command_reports_files_named_after_no_question_or_misplaced(tmp_path, monkeypatch):
    from django.core.management import call_command

    from questions.management.commands import calibration as command_module

    stray = [write(tmp_path, VALID, slug="no-such-question"), write(tmp_path, VALID, folder="ascend")]
    monkeypatch.setattr(command_module, "parse_bank", lambda: ([], list(UNIT_SPECS.values())))
    monkeypatch.setattr(command_module, "iter_calibration_files", lambda: stray)
    monkeypatch.setattr(command_module, "calibration_path", lambda spec: tmp_path / "numerics" / "absent.yaml")
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("calibration", stdout=out)
    assert exited.value.code == 1
    errors = [line for line in out.getvalue().splitlines() if line.startswith("ERROR")]
    assert len(errors) == 2 and "no question with slug 'no-such-question'" in errors[0]
    assert "in folder 'numerics'" in errors[1]
    assert "questions with calibration files: 0 of 1;" in out.getvalue()

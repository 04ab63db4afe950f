import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from questions.bankfile import BANK_DIR
from questions.models import Question, RubricPoint, SearchTerm, Topic
from questions.search import search_ids


@pytest.fixture
def bank_copy(tmp_path) -> Path:
    target = tmp_path / "bank"
    shutil.copytree(BANK_DIR, target)
    return target


def load(bank_dir: Path, capsys) -> str:
    call_command("loadbank", bank_dir=bank_dir)
    return capsys.readouterr().out


def test_load_is_idempotent(empty_bank, bank_copy, capsys):
    first = load(bank_copy, capsys)
    assert "80 created" in first
    counts = (Question.objects.count(), RubricPoint.objects.count(), SearchTerm.objects.count(), Topic.objects.count())
    second = load(bank_copy, capsys)
    assert "0 created, 0 updated, 80 unchanged" in second
    assert counts == (
        Question.objects.count(),
        RubricPoint.objects.count(),
        SearchTerm.objects.count(),
        Topic.objects.count(),
    )


def test_edits_update_and_removed_files_are_retired_not_deleted(empty_bank, bank_copy, capsys):
    load(bank_copy, capsys)
    active_id = Question.objects.get(slug="ramp-up-on-unfamiliar-codebase").id
    assert search_ids("uncommented codebase").ids == [active_id]
    path = bank_copy / "numerics" / "nan-loss-checklist.md"
    path.write_text(path.read_text().replace("difficulty: 3", "difficulty: 4"))
    removed = bank_copy / "troubleshooting" / "ramp-up-on-unfamiliar-codebase.md"
    removed_text = removed.read_text()
    removed.unlink()
    out = load(bank_copy, capsys)
    assert "1 updated" in out and "1 retired" in out
    assert "retired ramp-up-on-unfamiliar-codebase" in out
    assert Question.objects.get(slug="nan-loss-checklist").difficulty == 4
    retired = Question.objects.get(slug="ramp-up-on-unfamiliar-codebase")
    assert retired.retired and Question.objects.active().filter(slug="ramp-up-on-unfamiliar-codebase").count() == 0
    assert retired.id not in search_ids("uncommented codebase").ids
    removed.write_text(removed_text)
    assert "1 restored" in load(bank_copy, capsys)
    assert not Question.objects.get(slug="ramp-up-on-unfamiliar-codebase").retired
    assert retired.id in search_ids("uncommented codebase").ids


@pytest.mark.parametrize(
    "mutate,expected",
    [
        (
            lambda t: t.replace("difficulty: 3", "difficulty: 9"),
            "nan-loss-checklist.md: difficulty: must be an integer 1–5, got 9",
        ),
        (lambda t: t.replace("## answer:zh", "## answer:fr"), "nan-loss-checklist.md: line"),
        (
            lambda t: t.replace("  zh: 一段 PyTorch 训练代码的 Loss 一直是 NaN，你会按什么顺序排查？\n", ""),
            "title.zh: is missing or empty",
        ),
        (lambda t: t.replace("topic: numerics", "topic: astrology"), "topic: unknown topic 'astrology'"),
        (lambda t: t.replace("tags: [nan", "tags: [nan, [broken"), "front matter is not valid YAML"),
        (lambda t: t.replace('number: "202"', 'number: "299"'), "source.number: '299' is not a question number"),
        (
            lambda t: t.replace("[~fp16, ~float16", "[~fp16, float16"),
            "misconceptions[0].pattern[2]: mixes kinds of terms",
        ),
        (
            lambda t: t.replace("[[bf16, bfloat16], [65504", "[[65504"),
            "misconceptions[0].pattern: rivals (~term) take one group, and two groups of synonyms",
        ),
        (
            lambda t: t.replace("related_questions: []", "related_questions: [no-such-question]"),
            "related_questions[0]: no question with slug 'no-such-question'",
        ),
    ],
)
def test_a_bad_file_stops_the_import_and_writes_nothing(empty_bank, bank_copy, mutate, expected):
    path = bank_copy / "numerics" / "nan-loss-checklist.md"
    path.write_text(mutate(path.read_text()))
    with pytest.raises(CommandError) as err:
        call_command("loadbank", bank_dir=bank_copy)
    assert expected in str(err.value)
    assert "nothing was written" in str(err.value)
    assert Question.objects.count() == 0 and Topic.objects.count() == 0


def test_bad_file_during_an_update_keeps_the_old_bank(empty_bank, bank_copy, capsys):
    load(bank_copy, capsys)
    before = Question.objects.get(slug="gpu-memory-fragmentation").title_en
    good = bank_copy / "memory" / "gpu-memory-fragmentation.md"
    good.write_text(good.read_text().replace(f"en: {before}", "en: An edited title", 1))
    broken = bank_copy / "numerics" / "nan-loss-checklist.md"
    broken.write_text(broken.read_text().replace("weight: 3", "weight: heavy", 1))
    with pytest.raises(CommandError, match=r"rubric\[0\]\.weight"):
        call_command("loadbank", bank_dir=bank_copy)
    assert "An edited title" in good.read_text(), "the edit must really be in the file"
    assert Question.objects.get(slug="gpu-memory-fragmentation").title_en == before
    assert Question.objects.count() == 80


def test_duplicate_slug_and_source_are_reported(empty_bank, bank_copy):
    original = bank_copy / "numerics" / "nan-loss-checklist.md"
    (bank_copy / "memory" / "nan-loss-checklist.md").write_text(
        original.read_text().replace("topic: numerics", "topic: memory")
    )
    with pytest.raises(CommandError) as err:
        call_command("loadbank", bank_dir=bank_copy)
    assert "slug: 'nan-loss-checklist' is already used by" in str(err.value)
    assert "000_4baed18c4d18777a.txt #202 is already covered by" in str(err.value)

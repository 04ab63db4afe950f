"""Questions written in the browser go into the bank by loadbank's code path, and loadbank keeps them until
their bank file itself changes."""

import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from questions.bankfile import BANK_DIR, parse_question_text
from questions.loader import AuthoredQuestionError, apply_authored_question, authored_question_problems, text_hash
from questions.models import Question, RubricPoint, SearchTerm

SLUG = "nan-loss-checklist"


@pytest.fixture
def bank_copy(tmp_path) -> Path:
    target = tmp_path / "bank"
    shutil.copytree(BANK_DIR, target)
    return target


def load(bank_dir: Path, capsys) -> str:
    call_command("loadbank", bank_dir=bank_dir)
    return capsys.readouterr().out


def edited(bank_dir: Path, old: str, new: str, as_slug: str = SLUG):
    """nan-loss-checklist's file with one change, parsed as the file ``<as_slug>.md``."""
    text = (bank_dir / "numerics" / f"{SLUG}.md").read_text(encoding="utf-8").replace(old, new)
    assert new in text
    return parse_question_text(text, Path("numerics") / f"{as_slug}.md"), text


def test_a_browser_edit_survives_loadbank_until_the_file_changes(empty_bank, bank_copy, capsys):
    load(bank_copy, capsys)
    spec, text = edited(bank_copy, "difficulty: 3", "difficulty: 5")
    question = apply_authored_question(spec, text)
    assert question.difficulty == 5 and question.origin == Question.Origin.BROWSER
    assert question.content_hash == text_hash(text)

    out = load(bank_copy, capsys)
    assert "0 updated, 79 unchanged" in out and "1 kept as edited in the browser" in out
    assert f"kept {SLUG}: edited in the browser" in out
    assert Question.objects.get(slug=SLUG).difficulty == 5

    path = bank_copy / "numerics" / f"{SLUG}.md"
    path.write_text(path.read_text(encoding="utf-8").replace("difficulty: 3", "difficulty: 2"), encoding="utf-8")
    assert "1 updated" in load(bank_copy, capsys)  # the file changed: the file wins
    question = Question.objects.get(slug=SLUG)
    assert question.difficulty == 2 and question.origin == Question.Origin.BANK


def test_a_question_made_in_the_browser_is_not_retired_for_having_no_file(empty_bank, bank_copy, capsys):
    load(bank_copy, capsys)
    spec, text = edited(bank_copy, f"slug: {SLUG}", "slug: nan-loss-first-steps", as_slug="nan-loss-first-steps")
    question = apply_authored_question(spec, text)
    assert RubricPoint.objects.filter(question=question).count() == len(spec.rubric)
    assert SearchTerm.objects.filter(question=question).exists()  # searchable like any bank question
    out = load(bank_copy, capsys)
    assert "0 retired" in out and "1 kept as edited in the browser" in out
    assert not Question.objects.get(slug="nan-loss-first-steps").retired


def test_databases_loaded_before_the_file_hash_learn_it_and_keep_later_edits(empty_bank, bank_copy, capsys):
    load(bank_copy, capsys)
    Question.objects.update(bank_file_hash="")  # as a database loaded before this field existed
    assert "80 unchanged" in load(bank_copy, capsys)
    assert not Question.objects.filter(bank_file_hash="").exists()
    spec, text = edited(bank_copy, "difficulty: 3", "difficulty: 4")
    apply_authored_question(spec, text)
    assert "1 kept" in load(bank_copy, capsys)


def test_cross_checks_against_the_bank(bank):
    spec, text = edited(BANK_DIR, "related_questions: [", "related_questions: [no-such-question, ")
    errors, _warnings = authored_question_problems(spec)
    assert errors == {"related_questions[0]": "no question with slug 'no-such-question'"}
    with pytest.raises(AuthoredQuestionError, match="no-such-question"):
        apply_authored_question(spec, text)
    copy, _text = edited(BANK_DIR, f"slug: {SLUG}", "slug: nan-copy", as_slug="nan-copy")
    _errors, warnings = authored_question_problems(copy)
    assert f"also the source of '{SLUG}'" in warnings[0]

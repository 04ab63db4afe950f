"""A question names the documents its reference answer was checked against (``references:``)."""

import re
import shutil

import pytest
from django.core.management import call_command

from questions.bankfile import BANK_DIR, BankFileError, parse_question_text
from questions.models import Question

PATH = BANK_DIR / "numerics" / "nan-loss-checklist.md"
REFERENCE = (
    '  - {title: "PyTorch documentation: torch.autograd", section: "Anomaly detection", version: 2.5}\n'
    '  - {title: "Mixed Precision Training (Micikevicius et al., 2018)", url: "https://arxiv.org/abs/1710.03740"}\n'
)


def with_references(block: str) -> str:
    """The checklist question with ``block`` as its only references (whatever the file has today)."""
    text = PATH.read_text(encoding="utf-8")
    text = re.sub(r"^references:\n(?:  .*\n)*", "", text, flags=re.M)
    return text.replace("\ntitle:\n", f"\nreferences:\n{block}title:\n", 1)


def test_references_are_parsed_in_order_with_versions_as_text():
    spec = parse_question_text(with_references(REFERENCE), PATH)
    assert spec.references == [
        {"title": "PyTorch documentation: torch.autograd", "section": "Anomaly detection", "version": "2.5"},
        {"title": "Mixed Precision Training (Micikevicius et al., 2018)", "url": "https://arxiv.org/abs/1710.03740"},
    ]


@pytest.mark.parametrize(
    "block,expected",
    [
        ('  - {section: "Gradient scaling"}\n', "references[0].title: missing"),
        ("  - {title: T, page: 3}\n", "references[0]: unknown field 'page'"),
        ("  - {title: T, url: ftp://example.org/x}\n", "references[0].url: must be an http(s) address"),
        ('  - {title: ""}\n', "references[0].title: must be non-empty text"),
        ("  - just a string\n", "references[0]: must be a mapping"),
    ],
)
def test_a_bad_reference_is_named_with_its_place(block, expected):
    with pytest.raises(BankFileError) as err:
        parse_question_text(with_references(block), PATH)
    assert expected in str(err.value)
    assert "nan-loss-checklist.md" in str(err.value)


def test_loadbank_stores_them_and_the_reference_answer_shows_them(empty_bank, tmp_path, login, candidate):
    bank = tmp_path / "bank"
    shutil.copytree(BANK_DIR, bank)
    (bank / "numerics" / "nan-loss-checklist.md").write_text(with_references(REFERENCE), encoding="utf-8")
    call_command("loadbank", bank_dir=bank, verbosity=0)
    question = Question.objects.get(slug="nan-loss-checklist")
    assert question.references[1]["url"] == "https://arxiv.org/abs/1710.03740"

    client = login(candidate)
    before = client.get("/questions/nan-loss-checklist/").content.decode()
    assert 'data-testid="references"' not in before  # shown with the reference answer, not before
    client.post("/questions/nan-loss-checklist/reveal/")
    html = client.get("/questions/nan-loss-checklist/").content.decode()
    assert "PyTorch documentation: torch.autograd, Anomaly detection (version 2.5)" in html
    assert '<a href="https://arxiv.org/abs/1710.03740" rel="noopener noreferrer">' in html
    zh = client.get("/questions/nan-loss-checklist/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "核对依据" in zh and "（版本 2.5）" not in zh and "(版本 2.5)" in zh


def test_every_bank_question_names_what_it_was_checked_against():
    from questions.bankfile import iter_question_files, parse_question

    missing = [path.stem for path in iter_question_files() if not parse_question(path).references]
    assert missing == []

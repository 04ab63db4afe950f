"""The question editor's services: form ↔ file, the rubric check, versions, the bank, import and export."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from authoring import question_editing as editing
from authoring.models import AuthoringEvent, QuestionVersion
from authoring.question_forms import as_post_data, fields_from_data
from questions.bankfile import BANK_DIR, iter_question_files, parse_question, parse_question_text
from questions.concepts import answer_coverage
from questions.models import Question, RubricPoint

pytestmark = pytest.mark.django_db
SLUG = "amp-loss-scaling"
BANK_FILE = BANK_DIR / "numerics" / f"{SLUG}.md"
# Files whose text comes back byte for byte. Most do; the others differ only in spelling the parser reads the
# same: a needless quote, a float YAML reads back differently (amp-loss-scaling's "5.96e-8" is 5.96e-08), a
# misconception's default "penalty: 1.0" written out, or a reference's fields in another order.
EXPLICIT_DEFAULT_PENALTY = re.compile(r"\n +penalty: 1(?:\.0*)?\n")
BYTE_IDENTICAL = ["nan-loss-checklist", "pipeline-parallel-bubbles", "allreduce-algorithms"]


def bank_fields(slug: str = SLUG) -> dict:
    path = next(p for p in iter_question_files() if p.stem == slug)
    return editing.spec_to_fields(parse_question(path))


def through_the_form(fields: dict) -> dict:
    """What the editor page's inputs hold, posted back."""
    return fields_from_data(as_post_data(fields))


def test_every_bank_question_survives_file_form_file():
    """file → form inputs → file parses to the same question for every one; most come back byte for byte."""
    identical = []
    paths = iter_question_files()
    for path in paths:
        spec = parse_question(path)
        text = editing.fields_to_text(through_the_form(editing.spec_to_fields(spec)))
        assert parse_question_text(text, path) == spec, path.name
        # A misconception's default penalty is written out in some files and left out in the others (and
        # here): the same file to the parser, so it does not count against byte identity.
        if text == EXPLICIT_DEFAULT_PENALTY.sub("\n", path.read_text(encoding="utf-8")):
            identical.append(path.stem)
    assert len(identical) >= 0.9 * len(paths)
    assert set(BYTE_IDENTICAL) <= set(identical)


def test_synonyms_with_commas_and_numbers_round_trip():
    fields = bank_fields()
    fields["rubric"][0]["concepts"].append(["(out, in)", "65504", "true", "a: b", "#hash", "学习率"])
    spec = parse_question_text(editing.fields_to_text(through_the_form(fields)), BANK_FILE)
    assert spec.rubric[0].concepts[-1] == ["(out, in)", "65504", "true", "a: b", "#hash", "学习率"]


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (lambda f: f["title"].update(en=""), "title.en", "title.en: is missing or empty"),
        (lambda f: f["rubric"][1].update(weight="9"), "rubric[1].weight", "integer 1–5"),
        (
            lambda f: f["rubric"][0]["concepts"].append(["   "]) or f["rubric"][0].update(concepts=[]),
            "rubric[0].concepts",
            "1–6 synonym lists",
        ),
        (lambda f: f["answer"].update(en=f["answer"]["en"] + "\n## prompt:zh\nsneaky"), "answer.en", "appears twice"),
        (lambda f: f["prompt"].update(zh="## hint:zh"), "prompt.zh", "unknown section heading"),
        (lambda f: f.update(source_number="999"), "source.number", "is not a question number"),
        (lambda f: f.update(tags=["Not A Slug"]), "tags", "lowercase letters"),
        (lambda f: f.update(related_questions=["no-such-question"]), "related_questions", "no question with slug"),
        (lambda f: f.update(topic="cooking"), "topic", "unknown topic"),
        (lambda f: f.update(difficulty="hard"), "difficulty", "got 'hard'"),
    ],
)
def test_parser_messages_name_the_form_field(change, field, words):
    fields = bank_fields()
    change(fields)
    result = editing.check_fields(through_the_form(fields))
    assert not result.ok
    assert field in result.errors, result.errors
    assert words in result.errors[field]
    assert f"{SLUG}.md" in result.errors[field]  # the message names the file


def test_misconception_errors_and_penalty():
    fields = bank_fields()
    fields["rubric"][0]["misconceptions"] = [{"pattern": [["only one group"]], "en": "x", "zh": "y", "penalty": 0.5}]
    result = editing.check_fields(through_the_form(fields))
    assert "2–5 synonym lists" in result.errors["rubric[0].misconceptions[0].pattern"]
    fields["rubric"][0]["misconceptions"][0]["pattern"] = [["tensor core"], ["slow", "slower"]]
    result = editing.check_fields(through_the_form(fields))
    assert result.ok, result.errors
    assert result.spec.rubric[0].misconceptions[0].penalty == 0.5
    assert "penalty: 0.5" in result.text


def test_rubric_check_scores_like_the_practice_page():
    fields = bank_fields()
    spec = editing.check_fields(fields).spec
    results = editing.rubric_check(fields, spec, ["Tensor Cores run fp16 matmul faster."], "en")
    assert [r["name"] for r in results] == [
        "Reference answer (English)",
        "Reference answer (Chinese)",
        "Sample answer 1",
    ]
    for result, lang in zip(results[:2], ("en", "zh"), strict=True):
        _points, percent = answer_coverage(spec.answer[lang], [p.scoring() for p in spec.rubric])
        assert result["score"] == percent
        assert [p["key"] for p in result["points"]] == [p.key for p in spec.rubric]
    sample = results[2]
    tensor = next(p for p in sample["points"] if p["key"] == "tensor-cores")
    assert tensor["state"] == "partly found" and "bandwidth" in tensor["missing"]
    assert sample["score"] < results[0]["score"]


def test_rubric_check_shows_a_new_concept_missing_and_keeps_working_on_a_broken_file():
    fields = bank_fields()
    before = editing.rubric_check(fields, editing.check_fields(fields).spec, [], "en")[0]
    fields["rubric"][0]["concepts"].append(["zebra crossing"])
    fields["title"]["en"] = ""  # the file no longer parses; the check still scores the rubric
    check = editing.check_fields(fields)
    assert not check.ok
    after = editing.rubric_check(fields, check.spec, [], "en")[0]
    point = next(p for p in after["points"] if p["key"] == "tensor-cores")
    assert "zebra crossing" in point["missing"]
    assert after["score"] < before["score"]


def test_first_save_keeps_the_bank_file_then_the_edit_and_applies_it(author):
    question = Question.objects.get(slug=SLUG)
    fields = bank_fields()
    fields["rubric"][0]["concepts"].append(["zebra crossing", "斑马线"])
    fields["rubric"][1]["weight"] = 5
    version = editing.save_fields(author, fields, editing=SLUG, base=editing.state_token(question))
    assert version.number == 2
    first = QuestionVersion.objects.get(slug=SLUG, number=1)
    assert first.text == BANK_FILE.read_text(encoding="utf-8")  # what candidates saw before
    question.refresh_from_db()
    assert question.origin == Question.Origin.BROWSER
    point = RubricPoint.objects.get(question=question, key="tensor-cores")
    assert point.concepts[-1] == ["zebra crossing", "斑马线"]
    assert RubricPoint.objects.get(question=question, position=1).weight == 5
    rows = editing.history(SLUG)
    assert [r["version"].number for r in rows] == [2, 1]
    assert "+      - [zebra crossing, 斑马线]" in rows[0]["diff"]
    assert rows[1]["first"] and "bank file" in rows[1]["origin"]
    kinds = list(
        AuthoringEvent.objects.filter(subject="question", slug=SLUG).order_by("pk").values_list("kind", "actor")
    )
    assert kinds == [("imported", author.pk), ("edited", author.pk)]
    # What candidates see now is the saved version, and export gives exactly its text.
    assert editing.current_text(question) == (version.text, "version")
    name, text = editing.export_file(author, question)
    assert name == f"{SLUG}.md" and text == version.text
    assert parse_question_text(text, BANK_FILE).rubric[0].concepts[-1] == ["zebra crossing", "斑马线"]
    assert AuthoringEvent.objects.filter(kind="exported", slug=SLUG, actor=author).exists()


def test_a_save_from_a_stale_page_is_refused(author, staff_admin):
    question = Question.objects.get(slug=SLUG)
    opened = editing.state_token(question)
    mine, theirs = bank_fields(), bank_fields()
    theirs["title"]["en"] = "Their title"
    editing.save_fields(staff_admin, theirs, editing=SLUG, base=opened)
    mine["title"]["en"] = "My title"
    with pytest.raises(editing.QuestionRefused) as refused:
        editing.save_fields(author, mine, editing=SLUG, base=opened)
    assert "boss saved version 2" in refused.value.errors[""]
    assert Question.objects.get(slug=SLUG).title_en == "Their title"


def test_refusals_write_nothing(author):
    question = Question.objects.get(slug=SLUG)
    base = editing.state_token(question)
    with pytest.raises(editing.QuestionRefused, match="Nothing changed"):
        editing.save_fields(author, bank_fields(), editing=SLUG, base=base)
    renamed = bank_fields()
    renamed["slug"] = "another-slug"
    with pytest.raises(editing.QuestionRefused, match="cannot change"):
        editing.save_fields(author, renamed, editing=SLUG, base=base)
    with pytest.raises(editing.QuestionRefused, match="already exists"):
        editing.save_fields(author, bank_fields(), editing=None, base="")
    assert not QuestionVersion.objects.exists() and not AuthoringEvent.objects.exists()


def test_a_new_question_is_created_in_the_bank(author):
    fields = bank_fields()
    fields["slug"] = "amp-loss-scaling-basics"
    fields["title"] = {"en": "Mixed precision basics", "zh": "混合精度基础"}
    version = editing.save_fields(author, fields, editing=None, base="")
    assert version.number == 1
    question = Question.objects.get(slug="amp-loss-scaling-basics")
    assert question.title_zh == "混合精度基础" and question.origin == Question.Origin.BROWSER
    assert question.file_path == "numerics/amp-loss-scaling-basics.md"
    assert AuthoringEvent.objects.get(slug="amp-loss-scaling-basics").kind == "created"
    # The same source as an existing file: allowed here, but the author is told loadbank would refuse both files.
    assert "also the source of 'amp-loss-scaling'" in editing.check_fields(fields).warnings[0]
    reserved = dict(fields, slug="new")
    with pytest.raises(editing.QuestionRefused, match="reserved"):
        editing.save_fields(author, reserved, editing=None, base="")


def test_import_makes_the_next_version_and_refuses_bad_files_before_writing(author):
    text = BANK_FILE.read_text(encoding="utf-8").replace("difficulty: 3", "difficulty: 4")
    version = editing.import_file(author, f"{SLUG}.md", text.encode(), into=SLUG)
    assert version.number == 2 and Question.objects.get(slug=SLUG).difficulty == 4
    event = AuthoringEvent.objects.filter(kind="imported", slug=SLUG).order_by("-pk").first()
    assert event.detail == {"version": 2, "applied": True, "file": f"{SLUG}.md"}
    count = QuestionVersion.objects.count()
    bad = [
        ("x.txt", b"---\n", "a .md file"),
        (f"{SLUG}.md", b"\xff\xfe", "not UTF-8"),
        (f"{SLUG}.md", text.replace("difficulty: 4", "difficulty: 7").encode(), "difficulty: must be an integer"),
        ("other-name.md", text.encode(), "file name must be amp-loss-scaling.md"),
        (f"{SLUG}.md", b"x" * (editing.MAX_FILE_BYTES + 1), "at most"),
    ]
    for name, data, words in bad:
        with pytest.raises(editing.QuestionRefused) as refused:
            editing.import_file(author, name, data)
        assert words in refused.value.errors["file"]
    with pytest.raises(editing.QuestionRefused, match="not nan-loss-checklist"):
        editing.import_file(
            author, f"{SLUG}.md", text.replace("difficulty: 4", "difficulty: 2").encode(), into="nan-loss-checklist"
        )
    assert QuestionVersion.objects.count() == count


def test_export_of_an_untouched_question_is_its_bank_file(author):
    question = Question.objects.get(slug=SLUG)
    assert editing.export_file(author, question) == (f"{SLUG}.md", BANK_FILE.read_text(encoding="utf-8"))
    with pytest.raises(editing.QuestionRefused):
        editing.export_file(author, question, 3)


def test_previews_are_sanitised_like_the_bank():
    fields = bank_fields()
    fields["prompt"]["en"] = "**bold** <script>alert(1)</script> [x](javascript:alert(1))"
    html = editing.previews(fields)["prompt.en"]
    assert "<strong>bold</strong>" in html
    assert "<script" not in html and "javascript:" not in html


def test_file_path_for_names_the_bank_location():
    assert editing.file_path_for("x", "numerics") == Path("numerics/x.md")
    assert editing.file_path_for("x", "Bad Topic") == Path("bank/x.md")


def test_references_are_one_line_each_and_round_trip_through_the_form():
    fields = bank_fields()
    data = as_post_data(fields)
    data["references"] = (
        "Mixed Precision Training (Micikevicius et al., 2018) | | | https://arxiv.org/abs/1710.03740\n"
        "\n"
        "PyTorch documentation: torch.autograd | Anomaly detection | 2.5\n"
    )
    text = editing.fields_to_text(fields_from_data(data))
    assert (
        '  - {title: "Mixed Precision Training (Micikevicius et al., 2018)", url: "https://arxiv.org/abs/1710.03740"}'
        in text
    )
    spec = parse_question_text(text, BANK_FILE)
    assert spec.references == [
        {"title": "Mixed Precision Training (Micikevicius et al., 2018)", "url": "https://arxiv.org/abs/1710.03740"},
        {"title": "PyTorch documentation: torch.autograd", "section": "Anomaly detection", "version": "2.5"},
    ]
    # Back on the page, the same lines; posted again, the same file.
    shown = as_post_data(editing.spec_to_fields(spec))["references"]
    assert shown.splitlines() == [
        "Mixed Precision Training (Micikevicius et al., 2018) |  |  | https://arxiv.org/abs/1710.03740",
        "PyTorch documentation: torch.autograd | Anomaly detection | 2.5",
    ]
    assert editing.fields_to_text(through_the_form(editing.spec_to_fields(spec))) == text


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("A guide | | | ftp://example.org/guide", "references[0].url: must be an http(s) address"),
        (" | Section without a title", "references[0].title: missing"),
        ("A guide | s | v | https://example.org/a | b", "references[0].url: must be an http(s) address"),
    ],
)
def test_a_wrong_reference_is_named_next_to_the_references_field(line, words):
    data = as_post_data(bank_fields())
    data["references"] = line
    errors = editing.check_fields(fields_from_data(data)).errors
    assert words in errors["references"]


def test_references_export_and_import_unchanged(author):
    fields = bank_fields()
    fields["references"] = [{"title": "PyTorch documentation: torch.amp", "section": "GradScaler", "version": "2.5"}]
    version = editing.save_fields(
        author, fields, editing=SLUG, base=editing.state_token(Question.objects.get(slug=SLUG))
    )
    question = Question.objects.get(slug=SLUG)
    assert question.references == fields["references"]  # what candidates see under the answer
    name, text = editing.export_file(author, question, version.number)
    assert text == version.text and "references:" in text
    with pytest.raises(editing.QuestionRefused, match="Nothing changed"):
        editing.import_file(author, name, text.encode(), into=SLUG)
    assert parse_question_text(text, BANK_FILE).references == fields["references"]

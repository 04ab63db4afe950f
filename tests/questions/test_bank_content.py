"""The committed bank itself: every source question present, complete in both languages."""

from questions.bankfile import SOURCE_NUMBERS, iter_question_files, load_topics, parse_question
from questions.loader import parse_bank


def test_every_source_question_is_in_the_bank_once():
    _topics, specs = parse_bank()  # raises on any malformed file or broken cross-reference
    present = [(s.source_document, s.source_number) for s in specs]
    expected = {(doc, number) for doc, numbers in SOURCE_NUMBERS.items() for number in numbers}
    assert len(expected) == 80
    assert set(present) == expected, f"missing: {sorted(expected - set(present))}"
    assert len(present) == len(set(present))


def test_every_field_is_filled_in_both_languages():
    topic_slugs = {t.slug for t in load_topics()}
    for path in iter_question_files():
        spec = parse_question(path, topic_slugs)
        for lang in ("en", "zh"):
            assert spec.title[lang].strip() and spec.prompt[lang].strip() and spec.answer[lang].strip(), path
            assert all(point.text[lang].strip() for point in spec.rubric), path
        assert 3 <= len(spec.rubric) <= 8, path
        assert all(point.concepts for point in spec.rubric), path
        # Chinese bodies really are Chinese, English bodies really are English.
        assert sum("\u4e00" <= ch <= "\u9fff" for ch in spec.answer["zh"]) > 100, path
        assert sum("\u4e00" <= ch <= "\u9fff" for ch in spec.answer["en"]) < 20, path
        assert len(spec.answer["en"].split()) > 150, f"{path}: reference answer looks too short"


def test_every_reference_answer_earns_its_own_rubric():
    """A reference that scores low means the rubric's synonyms miss how an expert words the point."""
    from questions.concepts import answer_coverage

    topic_slugs = {t.slug for t in load_topics()}
    low = []
    for path in iter_question_files():
        spec = parse_question(path, topic_slugs)
        rubric = [(point.key, point.weight, point.concepts) for point in spec.rubric]
        for lang in ("en", "zh"):
            points, percent = answer_coverage(spec.answer[lang], rubric)
            if percent < 85:
                missing = [(p.key, p.missing) for p in points if p.missing]
                low.append(f"{path.name} ({lang}) {percent}%: missing {missing}")
    assert not low, "\n".join(low)

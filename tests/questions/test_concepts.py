from questions.concepts import answer_coverage

RUBRIC = [
    ("learning-rate", 3, [["learning rate", "lr", "学习率"], ["lower", "reduce", "降低"]]),
    ("clipping", 2, [["clip_grad_norm_", "gradient clipping", "梯度裁剪"]]),
    ("anomaly", 1, [["detect_anomaly", "异常检测"]]),
]


def test_english_answer_with_word_forms():
    points, percent = answer_coverage("I would reduce the learning rates first, then add Gradient Clipping.", RUBRIC)
    by_key = {p.key: p for p in points}
    assert by_key["learning-rate"].found == ["learning rate", "reduce"] and by_key["learning-rate"].fraction == 1
    assert by_key["clipping"].found == ["gradient clipping"]
    assert by_key["anomaly"].missing == ["detect_anomaly"]
    assert percent == round(100 * (3 + 2) / 6)


def test_chinese_answer_matches_chinese_synonyms():
    points, _ = answer_coverage("先把学习率降低 10 倍，再开启 梯度 裁剪。", RUBRIC)
    by_key = {p.key: p for p in points}
    assert by_key["learning-rate"].found == ["学习率", "降低"]
    assert by_key["clipping"].found == ["梯度裁剪"]  # whitespace inside Chinese is ignored


def test_code_names_match_as_written_and_short_words_need_word_boundaries():
    points, _ = answer_coverage(
        "Call torch.nn.utils.clip_grad_norm_ before step(); the slr mode is irrelevant.", RUBRIC
    )
    by_key = {p.key: p for p in points}
    assert by_key["clipping"].found == ["clip_grad_norm_"]
    assert by_key["learning-rate"].found == []  # "slr" must not count as "lr"


def test_empty_answer_covers_nothing():
    points, percent = answer_coverage("", RUBRIC)
    assert percent == 0 and all(p.fraction == 0 for p in points)

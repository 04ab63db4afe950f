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


def bank_rubric(slug: str) -> list:
    from questions.bankfile import iter_question_files, load_topics, parse_question

    topics = {t.slug for t in load_topics()}
    path = next(p for p in iter_question_files() if p.stem == slug)
    return [(point.key, point.weight, point.concepts) for point in parse_question(path, topics).rubric]


KEYWORD_LISTS = [
    "learning rate lower; input data isnan; fp16 GradScaler bf16; log eps softmax; gradient norm clipping; "
    "detect_anomaly hook",
    "learning rate lower, input data isnan, fp16 GradScaler bf16, log eps softmax, gradient norm clipping, "
    "detect_anomaly hook",
    "- learning rate\n- isnan\n- GradScaler\n- bf16\n- log eps\n- clip_grad_norm_\n- detect_anomaly",
    "学习率 降低；isnan；GradScaler；bf16；log eps；梯度裁剪；detect_anomaly",
    "学习率，降低，isnan，GradScaler，bf16，梯度裁剪，detect_anomaly",
]


def test_a_bare_keyword_list_earns_a_small_fraction_and_says_why():
    rubric = bank_rubric("nan-loss-checklist")
    for answer in KEYWORD_LISTS:
        points, percent = answer_coverage(answer, rubric)
        assert percent <= 30, (answer, percent)
        assert any(p.listed for p in points), answer  # the feedback names what was only listed
        assert not any(p.found for p in points), answer


def test_the_same_terms_in_sentences_earn_full_credit():
    rubric = [("learning-rate", 1, [["learning rate"], ["lower"]]), ("clipping", 1, [["gradient clipping"]])]
    prose = "The learning rate is too high for raw inputs, so lower it. Gradient clipping caps each update."
    _, percent = answer_coverage(prose, rubric)
    assert percent == 100
    listed_points, listed = answer_coverage("learning rate; lower; gradient clipping", rubric)
    assert listed == 25 and [p.listed for p in listed_points] == [["learning rate", "lower"], ["gradient clipping"]]


def test_code_blocks_and_table_rows_count_as_statements():
    rubric = [("sync", 1, [["synchronize"]]), ("compare", 1, [["allclose"]])]
    answer = "Time it properly:\n```python\ntorch.npu.synchronize()\n```\n| check | torch.allclose(a, b) |\n"
    assert answer_coverage(answer, rubric)[1] == 100

import pytest

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


def test_code_lines_count_as_statements_but_keywords_in_a_fence_or_table_do_not():
    rubric = [("sync", 1, [["synchronize"]]), ("compare", 1, [["allclose"]])]
    answer = (
        "Time it properly:\n```python\ntorch.npu.synchronize()\n```\n"
        "| check | compare them with torch.allclose(a, b) |\n"
    )
    assert answer_coverage(answer, rubric)[1] == 100
    hidden = "```\nsynchronize allclose\n```\n| synchronize | allclose |\n"
    assert answer_coverage(hidden, rubric)[1] == 25


def bank_point(slug: str, key: str, answer: str):
    points, percent = answer_coverage(answer, bank_rubric_full(slug))
    return next(p for p in points if p.key == key), percent


def bank_rubric_full(slug: str) -> list:
    from questions.bankfile import iter_question_files, load_topics, parse_question

    topics = {t.slug for t in load_topics()}
    path = next(p for p in iter_question_files() if p.stem == slug)
    return [point.scoring() for point in parse_question(path, topics).rubric]


PIPE = ("pipeline-parallel-bubbles", "gpipe-vs-1f1b")
BF16 = ("llama3-bf16-rope-precision-npu", "bf16-precision-not-range")
CLAMP = ("intermittent-nan-accelerator-stack-bug", "clamp-vs-nan")
CPU = ("low-gpu-util-idle-cpu", "one-core-hidden")
WRONG_CLAIMS = [
    (PIPE, "1F1B reduces the bubble compared to GPipe, and it saves activation memory."),
    (PIPE, "与 GPipe 相比，1F1B 减少了气泡，也节省了激活显存。"),
    (BF16, "bf16 overflows at 65504 like fp16, so precision is fine but range is the problem."),
    (BF16, "bf16 和 fp16 一样会在 65504 溢出，这就是精度问题的原因。"),
    (CLAMP, "clamp removes the NaN, so it fixes it; the values propagate normally afterwards."),
    (CPU, "The CPU is idle, which means the job is I/O bound, so the main thread is not the problem."),
]
DENIED = [
    (PIPE, "1F1B does not reduce the bubble compared to GPipe; it saves activation memory."),
    (PIPE, "1F1B 并不减少气泡，它节省的是激活显存。"),
    (CLAMP, "clamp does not remove the NaN: it passes straight through."),
    (BF16, "fp16 overflows at 65504; bf16 has fp32's range, so its problem is precision, not overflow."),
]


@pytest.mark.parametrize(("where", "answer"), WRONG_CLAIMS)
def test_a_wrong_claim_is_contradicted_with_an_explanation(where, answer):
    point, _ = bank_point(*where, answer)
    assert point.contradicted and point.fraction <= 0.4, point
    assert point.contradicted[0]["sentence"] and point.contradicted[0]["en"] and point.contradicted[0]["zh"]


@pytest.mark.parametrize(("where", "answer"), DENIED)
def test_the_same_words_denied_are_not_a_misconception(where, answer):
    point, _ = bank_point(*where, answer)
    assert not point.contradicted, point


def test_no_reference_answer_states_a_misconception_of_its_own_rubric():
    from questions.bankfile import iter_question_files

    for path in iter_question_files():
        rubric = bank_rubric_full(path.stem)
        if not any(point[3] for point in rubric):
            continue
        for lang in ("en", "zh"):
            from questions.bankfile import load_topics, parse_question

            spec = parse_question(path, {t.slug for t in load_topics()})
            points, _ = answer_coverage(spec.answer[lang], rubric)
            assert not any(p.contradicted for p in points), (path.name, lang, [p.contradicted for p in points])


def test_an_answer_in_another_notation_earns_the_pipeline_rubric():
    answer = (
        "With K pipeline stages and M micro-batches every stage idles while the pipeline fills and drains, "
        "so the bubble takes (K−1)/(M+K−1) of each step; more micro-batches make it smaller. "
        "1F1B leaves the bubble unchanged compared to GPipe, but it keeps only about K micro-batches of "
        "activation memory alive instead of M. An interleaved schedule puts several model chunks on each GPU "
        "and divides the bubble by the number of chunks, at the price of more communication. Beyond that, "
        "balance the stages, use fewer stages, try a zero-bubble schedule that splits the weight gradient "
        "from the input gradient, and overlap send/recv with compute."
    )
    _, percent = answer_coverage(answer, bank_rubric_full("pipeline-parallel-bubbles"))
    assert percent >= 85, percent

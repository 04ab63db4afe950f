import pytest

from questions.concepts import answer_coverage, makes_claim

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
    # The issue's own list in Chinese: 检查 and the 对 of 对数 are verbs only outside those terms.
    "学习率 降低；输入数据 检查 nan；半精度 损失缩放 bf16；对数 除零 softmax；梯度范数 裁剪；detect_anomaly 钩子",
    "学习率、降低、输入数据、检查 nan、半精度、损失缩放、对数、除零、梯度范数、裁剪、detect_anomaly、钩子",
    "learning rate lower, input data isnan, fp16 GradScaler bf16, log eps softmax, gradient norm clipping, "
    "detect_anomaly hook",
    "- learning rate\n- isnan\n- GradScaler\n- bf16\n- log eps\n- clip_grad_norm_\n- detect_anomaly",
    "学习率 降低；isnan；GradScaler；bf16；log eps；梯度裁剪；detect_anomaly",
    "学习率，降低，isnan，GradScaler，bf16，梯度裁剪，detect_anomaly",
    # The same lists dressed in filler: one copula, articles and "and" around the terms.
    "It is the lr, the isnan, the GradScaler, the eps, the clipping, the anomaly hook.",
    "The usual suspects are the learning rate, dirty data, fp16 overflow, the GradScaler, log of zero, exploding "
    "gradients and detect_anomaly.",
    "原因就是学习率、isnan、GradScaler、eps、梯度裁剪、异常检测钩子。",
    "要检查的是学习率、脏数据、半精度、GradScaler、softmax、梯度裁剪和 detect_anomaly。",
    # Short filler sentences are one list cut in pieces.
    "It is the lr, the isnan. It is the GradScaler, the eps. It is the clipping, the anomaly hook.",
    "原因是学习率、isnan。还有 GradScaler、eps。以及梯度裁剪、异常检测钩子。",
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


def test_prose_that_enumerates_stays_prose():
    """What separates a list in disguise from prose: its items are bare names of several rubric points. An
    enumeration inside one point, or items that are instructions, are statements."""
    versions = [("versions", 1, [["driver"], ["firmware"], ["cann"], ["torch_npu"]]), ("other", 1, [["hccl"]])]
    sentence = "Check the driver, the firmware, the CANN version, and the torch_npu version against the matrix."
    points, _ = answer_coverage(sentence, versions)
    assert points[0].found == ["driver", "firmware", "cann", "torch_npu"]
    instructions = "Lower the learning rate, check each batch with isnan, use a GradScaler, and clip the gradients."
    points, _ = answer_coverage(instructions, bank_rubric("nan-loss-checklist"))
    by_key = {p.key: p for p in points}
    assert "lower" in by_key["learning-rate"].found and by_key["dirty-data"].found and by_key["fp16-range"].found
    chinese = "NCCL 用双二叉树，两棵树各传一半数据，一个节点不会在两棵树里都是叶子，所以带宽接近环形。"
    tree = [("tree", 1, [["双二叉树"], ["叶子"]]), ("ring", 1, [["环形"]]), ("data", 1, [["一半数据"]])]
    assert answer_coverage(chinese, tree)[1] == 100  # clauses between Chinese commas are not items


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


LR = [("lr", 1, [["learning rate", "lr", "学习率"]]), ("data", 1, [["isnan", "脏数据", "dirty data"]])]
DENIED_TERMS = [
    "It isn't the learning rate; the data is full of NaN.",
    "The learning rate is not the cause here.",
    "The learning rate is never the cause here.",
    "Lower the batch size rather than the learning rate.",
    "Tune the warm-up instead of the learning rate.",
    "不是学习率的问题，数据里有 NaN。",
    "问题并非学习率，数据里有 NaN。",
    "应该调小 batch size，而不是学习率。",
    "学习率不是原因，数据里有 NaN。",
    "Check the data, not the learning rate.",
]


@pytest.mark.parametrize("answer", DENIED_TERMS)
def test_a_term_the_answer_denies_earns_nothing(answer):
    points, _ = answer_coverage(answer, LR)
    assert points[0].fraction == 0 and not points[0].found and not points[0].listed, points[0]


AFFIRMED_TERMS = [
    "The learning rate is too high, not the data.",  # the denial follows the term and denies "the data"
    "It is not the data but the learning rate that blows up.",  # "but" ends the denial's reach
    "Loss scaling is not needed when the learning rate is this small.",  # denies "needed", not the term
    "The learning rate is not small enough for raw inputs.",  # says something about it, not "it is not it"
    "不是数据的问题，而是学习率太大。",
    "学习率过大，而不是数据有问题。",
    "Check whether or not the learning rate is too high.",
    "不是学习率过大，就是数据有问题。",  # either … or
]


@pytest.mark.parametrize("answer", AFFIRMED_TERMS)
def test_a_term_outside_the_denial_still_counts(answer):
    points, _ = answer_coverage(answer, LR)
    assert points[0].fraction == 1, points[0]


@pytest.mark.parametrize("answer", ["The CPU is not the bottleneck here.", "这里 CPU 不是瓶颈。"])
def test_a_point_that_claims_a_denial_is_earned_by_it(answer):
    """ "CPU is not the bottleneck" denies the CPU, unless that denial is what the point asks for."""
    rubric = [("cpu-fine", 1, [["cpu"], ["not the bottleneck", "不是瓶颈"]])]
    assert answer_coverage(answer, rubric)[1] == 100
    assert answer_coverage(answer, [("cpu", 1, [["cpu"]])])[1] == 0


NOT_ONLY = [
    "1F1B not only reduces the bubble compared to GPipe but also saves activation memory.",
    "与 GPipe 相比，1F1B 不仅减少了气泡，而且节省了激活显存。",
    "1F1B 不但减少了气泡，还节省了激活显存。",
]


@pytest.mark.parametrize("answer", NOT_ONLY)
def test_not_only_but_also_asserts_the_misconception(answer):
    point, _ = bank_point(*PIPE, answer)
    assert point.contradicted and point.fraction <= 0.4, point


@pytest.mark.parametrize(
    "answer",
    [
        "Packet loss does not just slow training down; it can also abort the job.",
        "丢包并不只是变慢，还可能让任务退出。",
    ],
)
def test_not_just_denies_a_misconception_that_is_itself_about_only(answer):
    """ "does not just slow …, it also aborts" has an also-part, yet denies "just slows": "not only/不只" is
    emphasis only when the "only" is not the misconception's own word."""
    rubric = [
        ("loss", 1, [["packet loss", "丢包"]],
         [{"pattern": [["packet loss", "丢包"], ["just slow", "只是变慢"]], "en": "x", "zh": "x"}]),
    ]  # fmt: skip
    points, _ = answer_coverage(answer, rubric)
    assert not points[0].contradicted, points[0]


@pytest.mark.parametrize(
    ("slug", "answer"),
    [
        # One number or formula among twenty terms does not make the list a sentence.
        ("amp-loss-scaling", "Tensor Cores matmul bandwidth autocast fp32 softmax activations optimizer state "
         "underflow 65504 dynamic range chain rule GradScaler unscale skip backoff bf16 exponent Ampere"),
        ("pipeline-parallel-bubbles", "bubble fill drain stage micro-batch (p-1)/(m+p-1) GPipe 1F1B activation "
         "memory interleaved virtual pipeline chunks communication zero bubble weight gradient balance overlap"),
        ("pipeline-parallel-bubbles", "气泡 填充 排空 阶段 微批 (p-1)/(m+p-1) GPipe 1F1B 激活显存 交错 虚拟流水线 "
         "模型块 通信 零气泡 权重梯度 负载均衡 重叠"),
    ],
)  # fmt: skip
def test_a_number_or_a_verb_that_is_a_rubric_term_does_not_make_a_list_a_claim(slug, answer):
    points, percent = answer_coverage(answer, bank_rubric_full(slug))
    assert percent <= 30 and not any(p.found for p in points), (percent, [p.found for p in points])


@pytest.mark.parametrize(
    "fragment",
    [
        "ZeRO-3 sharding optimizer partition",  # the 3 of a name is not a number
        "num_workers=0 pin_memory prefetch_factor",  # a setting, not a relation
        "I/O dataloader workers storage",  # the I of I/O is not a pronoun
        "reduce-scatter all-gather all-reduce ring tree",  # nor the "all" and "reduce" inside names
        "no_sync set_device enable_grad level1",
        "bubble stage micro-batch 65504 pipeline",  # a bare number among terms
    ],
)
def test_names_with_small_words_or_digits_inside_are_not_claims(fragment):
    assert not makes_claim(fragment)


@pytest.mark.parametrize(
    "sentence",
    ["The bubble = (p-1)/(m+p-1) of each step.", "With p = 8 and m = 32 about 18 % of the step is idle.",
     "并行文件系统要能在几分钟内写完 1 TB 的 checkpoint。", "对数的输入要先加 eps。"],
)  # fmt: skip
def test_sentences_with_numbers_relations_and_verbs_stay_claims(sentence):
    assert makes_claim(sentence)


def test_a_rubric_term_that_is_a_verb_only_names_the_concept():
    rubric = [
        ("scaling", 1, [["underflow", "下溢"], ["skip", "跳过"], ["GradScaler"]]),
        ("storage", 1, [["parallel file system", "并行文件系统"], ["I/O", "i/o"]]),
        ("k8s", 1, [["Dynamic Resource Allocation", "动态资源分配"], ["device plugin", "设备插件"]]),
    ]
    for answer in [
        "underflow skip GradScaler parallel file system I/O Dynamic Resource Allocation device plugin",
        "下溢、跳过、GradScaler、并行文件系统、i/o、动态资源分配、设备插件",
    ]:
        points, percent = answer_coverage(answer, rubric)
        assert percent <= 30 and not any(p.found for p in points), (answer, [p.found for p in points])
    prose = "Gradients underflow in fp16, so GradScaler multiplies the loss and skips steps that overflow."
    assert answer_coverage(prose, rubric)[0][0].fraction == 1


FRAG = ("gpu-memory-fragmentation", "fragmentation-symptom")
ONE_CORE = ("low-gpu-util-idle-cpu", "one-core-hidden")
EINSUM = ("einsum-slow-on-npu-rewrite", "why-slow")
NEGATION_INSIDE_WORDS = [
    (ONE_CORE, "CPU 不高说明是 I/O 瓶颈。"),  # the 不 of the pattern's own "CPU 不高"
    (FRAG, "预留但未分配，说明有显存泄漏。"),  # the 未 of "预留但未分配"
    (ONE_CORE, "不过，CPU 空闲说明是 I/O 瓶颈。"),  # a leading "不过，" is another clause
    (ONE_CORE, "基本没错：CPU 空闲说明是 I/O 瓶颈。"),
    (ONE_CORE, "CPU 空闲在不同机器上都说明是 I/O 瓶颈。"),  # 不同 is "different", not a denial
    (EINSUM, "The NPU has no einsum kernel, so einsum copies the operands to the host."),
    (CLAMP, "查看错误日志后发现 clamp 能解决 NaN。"),  # 错误日志 is an error log, not "wrong"
    (CLAMP, "The error log shows NaN, and clamp removes the NaN, so it fixes it."),
]


@pytest.mark.parametrize(("where", "answer"), NEGATION_INSIDE_WORDS)
def test_a_negation_inside_a_word_or_another_clause_does_not_hide_a_wrong_claim(where, answer):
    point, _ = bank_point(*where, answer)
    assert point.contradicted, point


MORE_DENIALS = [
    (CLAMP, "clamp 解决不了 NaN，只是把它藏起来。"),
    (CLAMP, "clamp can't remove the NaN; it only hides it."),
    (ONE_CORE, "An idle CPU does not mean the job is I/O bound."),
    (ONE_CORE, "CPU 空闲并不说明是 I/O 瓶颈。"),
    (CLAMP, "这种说法是错误的：clamp 能解决 NaN。"),
    (EINSUM, "The claim that einsum copies the operands to the host is wrong."),
]


@pytest.mark.parametrize(("where", "answer"), MORE_DENIALS)
def test_denials_after_the_verb_and_cant_are_denials(where, answer):
    point, _ = bank_point(*where, answer)
    assert not point.contradicted, point


@pytest.mark.parametrize(
    ("answer", "stated"),
    [
        ("偶尔超时没关系，多加重试就能解决。", True),  # the 没 belongs to the clause before
        ("Timeouts now and then are no big deal, more retries fixes it.", True),
        ("多加重试并不能解决。", False),
        ("More retries never fixes it.", False),
    ],
)
def test_a_denial_before_the_pattern_reaches_only_its_own_clause(answer, stated):
    pattern = [["重试", "retries"], ["就能解决", "能解决", "fixes it"]]
    rubric = [("retry", 1, [["重试", "retries"]], [{"pattern": pattern, "en": "x", "zh": "x"}])]
    assert bool(answer_coverage(answer, rubric)[0][0].contradicted) is stated


def test_the_no_of_no_sync_denies_nothing():
    rubric = [("sync", 1, [["no_sync"]], [{"pattern": [["no_sync"], ["every step", "每一步"]], "en": "x", "zh": "x"}])]
    points, _ = answer_coverage("Wrapping the backward in no_sync() still syncs every step.", rubric)
    assert points[0].contradicted, points[0]


@pytest.mark.parametrize(
    ("answer", "plain"),
    [
        ("Interleaved 1F1B reduces the bubble by the number of model chunks per GPU.", "1F1B reduces the bubble."),
        ("交错式 1F1B 把气泡按每张卡上的块数缩小。", "1F1B 把气泡缩小了。"),
    ],
)
def test_an_exclusion_term_stops_a_misconception(answer, plain):
    """The gpipe-vs-1f1b pattern excludes "interleaved 1F1B"/"交错式": that schedule does shrink the bubble."""
    assert not bank_point(*PIPE, answer)[0].contradicted
    assert bank_point(*PIPE, plain)[0].contradicted


FP16_RANGE = ("nan-loss-checklist", "fp16-range")
BF16_PRECISION = ("amp-loss-scaling", "bf16")
FORMATS = ("mixed-precision-training-pitfalls", "formats")


@pytest.mark.parametrize(
    ("where", "answer", "stated"),
    [
        (FP16_RANGE, "fp16 has a max of 65504 and small values flush to zero, so use GradScaler or bf16.", False),
        (FP16_RANGE, "fp16 overflows past 65504, so I would switch to bf16.", False),
        (FP16_RANGE, "fp16 的最大值是 65504，所以改用 bf16。", False),
        (FP16_RANGE, "bf16 has the same max of 65504 as fp16, so it overflows just as easily.", True),
        (FP16_RANGE, "Unlike fp16, bf16 overflows at 65504.", True),
        (FP16_RANGE, "65504 is the largest value bf16 can hold.", True),
        (FP16_RANGE, "bf16 的最大值也是 65504。", True),
        # A rival named as the subject's companion shares what is said.
        (FP16_RANGE, "bf16, like fp16, has a max of 65504.", True),
        (FP16_RANGE, "bf16 and fp16 both overflow at 65504.", True),
        (FP16_RANGE, "bf16 的最大值和 fp16 一样是 65504。", True),
        (FP16_RANGE, "fp16 is unlike bf16: fp16 has a max of 65504.", False),
        (FP16_RANGE, "With bf16 and fp16 the ranges differ: the max is 65504 for fp16.", False),
        (FP16_RANGE, "bf16 和 fp16 都在 65504 溢出。", True),
        (FP16_RANGE, "Use bf16 or GradScaler with fp16, because fp16 has a max of 65504.", False),
        (BF16_PRECISION, "fp16 has more precision than bf16, which has fp32's range instead.", False),
        (BF16_PRECISION, "bf16 has more precision than fp16.", True),
        (BF16_PRECISION, "fp32 has higher precision than bf16, which keeps the range of fp32.", False),
        (FORMATS, "fp16 and fp32 both have higher precision than bf16.", False),
        (FORMATS, "bf16 has higher precision than fp16, so prefer it.", True),
    ],
)  # fmt: skip
def test_a_limit_said_of_a_rival_format_is_not_the_misconception(where, answer, stated):
    """These patterns name fp16 (and fp32) rivals of bf16: 65504 or "more precision" said of a rival in the same
    sentence as bf16 is the correct answer, and said of bf16 is the misconception."""
    assert bool(bank_point(*where, answer)[0].contradicted) is stated


@pytest.mark.parametrize(
    ("answer_word", "synonym"),
    [("caches", "cache"), ("fused", "fuse"), ("releases", "release"), ("minimises", "minimize"),
     ("normalised", "normalize"), ("analysed", "analyze")],
)  # fmt: skip
def test_word_forms_and_british_spellings_match(answer_word, synonym):
    points, _ = answer_coverage(f"The allocator {answer_word} the blocks on every step.", [("p", 1, [[synonym]])])
    assert points[0].found == [synonym]
    assert not answer_coverage("Take note of it.", [("p", 1, [["not"]])])[0][0].found  # "note" is not "not"


def test_markdown_emphasis_inside_a_chinese_term_still_matches():
    rubric = [("count", 1, [["参数的个数", "number of parameters"]])]
    assert answer_coverage("模型大小取决于参数的**个数**，而不是层数。", rubric)[1] == 100
    assert answer_coverage("Model size depends on the **number of parameters**.", rubric)[1] == 100


@pytest.mark.parametrize(
    "answer",
    [
        "The CPU is idle, which means the\njob is I/O bound.",
        "CPU 空闲，\n说明是 I/O 瓶颈。",
    ],
)
def test_a_hard_wrapped_sentence_is_one_sentence(answer):
    point, _ = bank_point(*ONE_CORE, answer)
    assert point.contradicted, point


def test_a_keyword_list_one_per_line_stays_a_list():
    answer = "learning rate\nlower\nisnan\nGradScaler\nclip_grad_norm_\n学习率\n降低"
    assert answer_coverage(answer, bank_rubric("nan-loss-checklist"))[1] <= 30


@pytest.mark.parametrize(
    "answer",
    ["I don't trust nvidia-smi GPU utilization: it only says some kernel was running.",
     "我不信任 nvidia-smi 的 GPU 利用率：它只说明有 kernel 在跑。"],
)  # fmt: skip
def test_distrusting_a_tool_still_names_it(answer):
    point, _ = bank_point("inference-metrics-optimization", "utilization-measure", answer)
    assert "nvidia-smi" in point.found, point


def test_short_sentences_that_are_prose_stay_prose():
    answer = "The learning rate is too high, so lower it. Check the data with isnan. Use a GradScaler for fp16."
    points, _ = answer_coverage(answer, bank_rubric("nan-loss-checklist"))
    by_key = {p.key: p for p in points}
    assert by_key["learning-rate"].found and by_key["dirty-data"].found and by_key["fp16-range"].found

"""Rubric terms dressed up as sentences score as the keyword list they are, on every question of the bank.

The answers here are written the way someone gaming ``scoreanswer`` would write them: take each rubric
point's terms (its first synonym in the answer's language) and wrap them in sentences that say nothing
about them. They are generated from the rubric rather than copied from one question, so a rubric edited
or added later is held to the same band.
"""

from __future__ import annotations

import re

import pytest

from questions.bankfile import iter_question_files, load_topics, parse_question
from questions.concepts import answer_coverage

TOPICS = {t.slug for t in load_topics()}
RUBRICS = {path.stem: [p.scoring() for p in parse_question(path, TOPICS).rubric] for path in iter_question_files()}
KEYWORDS_BAND = 30
CJK_RE = re.compile(r"[\u4e00-\u9fff]")

# What filler says of a term: that it matters, in several wordings, so that no one template repeats.
PREDICATES = ["matter", "are important", "are key", "are relevant", "play a role", "need attention", "count"]
ZH_PREDICATES = ["很重要", "是关键", "需要注意", "值得关注", "有影响", "要考虑"]


def point_terms(rubric: list, zh: bool) -> list[list[str]]:
    """Each point's concepts, each as its first synonym in the language."""
    return [
        [next((s for s in synonyms if bool(CJK_RE.search(s)) == zh), synonyms[0]) for synonyms in point[2]]
        for point in rubric
    ]


def own_predicates(predicates: list[str], rubric: list) -> list[str]:
    """The predicates that name none of the rubric's terms: "need attention" says something on a question
    whose rubric has "attention" as a concept, and "billions of parameters count" makes the term "parameter
    count"."""
    words = {w for point in rubric for synonyms in point[2] for s in synonyms for w in s.lower().split()}
    return [p for p in predicates if not words & {p, *p.split()}]


def joined(terms: list[str], zh: bool) -> str:
    if len(terms) == 1:
        return terms[0]
    return "、".join(terms[:-1]) + "和" + terms[-1] if zh else ", ".join(terms[:-1]) + " and " + terms[-1]


# Per language: how sentences are joined, and each shape of filler as (name, sentence per item, items).
SHAPES = {
    "en": (" ", PREDICATES, [
        ("one template per point", "The {terms} matter.", "points"),
        ("a wording per point", "The {terms} {said}.", "points"),
        ("one template per term", "The {terms} matters.", "terms"),
        ("a wording per term", "The {terms} {said_of_one}.", "terms"),
        ("an instruction per point", "I would look at the {terms}.", "points"),
    ]),
    "zh": ("", ZH_PREDICATES, [
        ("one template per point", "{terms}很重要。", "points"),
        ("a wording per point", "{terms}{said}。", "points"),
        ("one template per term", "{terms}很重要。", "terms"),
        ("a wording per term", "{terms}{said}。", "terms"),
        ("an instruction per point", "我会检查{terms}。", "points"),
    ]),
}  # fmt: skip


def filler(rubric: list, lang: str) -> dict[str, str]:
    """Every shape of filler for the rubric in the language, by name."""
    zh = lang == "zh"
    sep, predicates, shapes = SHAPES[lang]
    points = point_terms(rubric, zh=zh)
    items = {"points": points, "terms": [[t] for terms in points for t in terms]}
    said = own_predicates(predicates, rubric)
    answers = {
        name: sep.join(
            form.format(
                terms=joined(terms, zh), said=said[i % len(said)], said_of_one=said[i % len(said)].replace("are", "is")
            )
            for i, terms in enumerate(items[kind])
        )
        for name, form, kind in shapes
    }
    flat = [terms[0] for terms in items["terms"]]
    if zh:
        answers["one sentence of alternatives"] = "可能是" + "或者".join(flat) + "。"
    else:
        answers["one sentence of alternatives"] = "It could be the " + ", or ".join(flat) + "."
        answers["one sentence joined by and"] = "The " + " and the ".join(flat) + " all matter here."
    return answers


@pytest.mark.parametrize("slug", sorted(RUBRICS))
def test_filler_sentences_around_every_rubrics_terms_score_as_a_keyword_list(slug):
    rubric = RUBRICS[slug]
    scores = {}
    for lang in SHAPES:
        for name, answer in filler(rubric, lang).items():
            scores[f"{lang}: {name}"] = answer_coverage(answer, rubric)[1]
    over = {name: score for name, score in scores.items() if score > KEYWORDS_BAND}
    assert not over, f"{slug}: filler above the keyword band of {KEYWORDS_BAND}: {over}"


NAN = "nan-loss-checklist"
HAND_WRITTEN_FILLER = [
    "The learning rate and lowering it matter. The batch and isfinite matter. fp16, GradScaler and bf16 matter. "
    "The log, epsilon and softmax matter. The gradient norm and clip_grad_norm_ matter. detect_anomaly and a hook "
    "matter.",
    "It could be the learning rate, or lowering it, or the batch, or isfinite, or fp16, or GradScaler, or bf16, or "
    "the log, or epsilon, or softmax, or the gradient norm, or clip_grad_norm_, or detect_anomaly, or a hook.",
    "The learning rate is crucial. Lowering it is essential. The batch deserves attention. isfinite is useful. "
    "fp16 is significant. GradScaler is vital. bf16 is relevant. The log is important. epsilon plays a role. "
    "softmax is key. The gradient norm matters. clip_grad_norm_ is helpful. detect_anomaly counts. A hook matters.",
    # Numbered, and with "it" after a term: the same template all the same.
    "First, the learning rate is related to lowering it. Second, the batch is related to isfinite. Then fp16 is "
    "related to GradScaler and bf16. Next, the log is related to epsilon and softmax. Also the gradient norm is "
    "related to clip_grad_norm_. Finally, detect_anomaly is related to a hook.",
    "The learning rate matters because lowering it matters. The batch matters because isfinite matters. fp16 "
    "matters because GradScaler and bf16 matter. The log matters because epsilon and softmax matter.",
    "首先，学习率和降低有关。其次，输入数据和 isfinite 有关。然后，fp16、GradScaler 和 bf16 有关。最后，梯度范数和 "
    "clip_grad_norm_ 有关。",
    "学习率和降低很重要。输入数据和 isfinite 是关键。fp16、GradScaler 和 bf16 值得关注。对数、eps 与 softmax 有影响。"
    "梯度范数和梯度裁剪要考虑。detect_anomaly 和钩子也很重要。",
]


@pytest.mark.parametrize("answer", HAND_WRITTEN_FILLER)
def test_hand_written_filler_on_the_nan_checklist_is_a_list_and_the_feedback_says_so(answer):
    points, percent = answer_coverage(answer, RUBRICS[NAN])
    assert percent <= KEYWORDS_BAND, percent
    assert any(p.listed for p in points) and not any(p.found for p in points)


TERSE_ANSWERS = [
    "Lower the learning rate tenfold and add warm-up. Check every batch with torch.isfinite and fix the bad rows. "
    "Under fp16 use GradScaler, or switch to bf16. Replace log and exp with log_softmax and use an epsilon that "
    "fits the dtype. Log the gradient norm and clip with clip_grad_norm_. Turn on detect_anomaly and add forward "
    "hooks to find the first op.",
    "先把学习率降低 10 倍并加预热。对每个 batch 的输入用 torch.isfinite 检查，修掉脏数据。用 fp16 时配合 GradScaler，"
    "或者换成 bf16。把 log 和 exp 换成 log_softmax，eps 要和数据类型匹配。记录梯度范数，用 clip_grad_norm_ 做梯度裁剪。"
    "最后打开 detect_anomaly，再给模块注册前向钩子定位算子。",
]


@pytest.mark.parametrize("answer", TERSE_ANSWERS)
def test_a_terse_answer_that_says_what_to_do_with_each_term_keeps_full_credit(answer):
    """Short imperative sentences share a shape too ("Check X. Use Y."), but each says what to do."""
    assert answer_coverage(answer, RUBRICS[NAN])[1] >= 85


@pytest.mark.parametrize(
    "sentence",
    [
        "fp16 needs a GradScaler.",  # "needs" relates two terms; it is not "needs attention"
        "FSDP does not shard activations.",
        "bf16 is also important for the exponent range, because it has the exponent bits of fp32.",
        "要和其他进程共卡，就固定 npuMemSize 或调低比例。",  # 和 here is "with", not a list
        "fp16 影响 GradScaler 的设置。",  # 影响 relates two terms; only 有影响 says nothing
    ],
)
def test_sentences_that_relate_terms_stay_claims(sentence):
    rubric = [
        ("formats", 1, [["fp16"], ["GradScaler", "bf16"], ["exponent"]]),
        ("sharding", 1, [["FSDP"], ["activations"]]),
        ("sharing", 1, [["npuMemSize"], ["共卡"]]),
    ]
    points, _ = answer_coverage(sentence, rubric)
    assert any(p.found for p in points), sentence

"""Chinese rubric terms match whole words of the segmented answer, not any substring (issue 13).

The false positives below are sentences from the bank's own answers, scored against the synonym lists of
the rubric points named beside them, that used to earn the point as substrings."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from questions import segmenter
from questions.concepts import answer_coverage

REPO = Path(__file__).resolve().parents[2]


def found(text: str, synonyms: list[str]) -> list[str]:
    (point,), _ = answer_coverage(text, [("p", 1, [synonyms])])
    return point.found


@pytest.mark.parametrize(
    ("text", "synonyms"),
    [
        # nan-loss-checklist "log" point; the sentence is from the same question's reference answer.
        ("确认 `eps` 相对数据类型不会过小。", ["log", "对数"]),
        # nan-loss-checklist "input data" point against small-jpeg-files' "元数据操作".
        ("MB/s 很低、存储端元数据操作很多，就是小文件问题。", ["input data", "输入数据", "数据", "脏数据"]),
        # allreduce-algorithms "log N" point against cost-observability's "对数据集和检查点使用生命周期".
        ("对数据集和检查点使用生命周期策略来控制成本。", ["log N", "对数"]),
        # checkpoint-save-restore-performance "blocking" point, against a sentence of its own reference:
        # "非阻塞" does not say "阻塞".
        ("它既不是非阻塞的——`.cpu()` 要等 GPU。", ["stall", "blocking", "停顿", "阻塞"]),
        # pd-disaggregation-vs-colocation: "无停顿" is the opposite of "停顿".
        ("Sarathi-Serve 用无停顿批处理把预填充块和解码放进同一批。", ["stall", "停顿"]),
        # einsum-slow-on-npu-rewrite: "连续" is not said by "非连续".
        ("permute 之后张量是非连续的，所以算子要先拷贝一份。", ["contiguous", "连续"]),
    ],
)
def test_a_short_term_inside_another_word_earns_nothing(text, synonyms):
    assert found(text, synonyms) == []


@pytest.mark.parametrize(
    ("text", "synonyms", "expected"),
    [
        # Several words in a row: 读取/自己/的/分片.
        (
            "恢复时每个 rank 并行读取自己的分片，不必让 rank 0 读完再广播。",
            ["parallel read", "读取自己的分片"],
            "读取自己的分片",
        ),
        ("先检查输入数据里有没有 NaN，再看学习率。", ["input data", "输入数据"], "输入数据"),
        # Spaces and Markdown emphasis inside a Chinese term are still ignored.
        ("开启 梯度 裁剪 可以把范数限制住。", ["gradient clipping", "梯度裁剪"], "梯度裁剪"),
        ("这里统计的是参数的**个数**，不是字节数。", ["number of parameters", "参数的个数"], "参数的个数"),
        # A compound of two words says each of them; so does a word with a neutral affix.
        ("给网络加上残差连接和归一化层，梯度就能传到前面。", ["residual", "残差"], "残差"),
        ("decode 阶段受限的是显存带宽，所以批越大越划算。", ["bandwidth", "带宽"], "带宽"),
        ("对一个已有多线程的进程执行 fork 会复制锁的状态。", ["thread", "线程"], "线程"),
    ],
)
def test_terms_on_word_boundaries_still_match(text, synonyms, expected):
    assert found(text, synonyms) == [expected]


def test_a_term_followed_by_more_chinese_matches_when_the_words_split_there():
    # 学习率 is one word of the bank's dictionary, so "学习率调低" cuts 学习率/调低.
    assert found("把学习率调低十倍以后损失就稳定了。", ["learning rate", "学习率"]) == ["学习率"]


@pytest.mark.parametrize(
    "text",
    [
        "不是学习率的问题，输入数据里有 NaN。",
        "学习率不是原因，输入数据里有 NaN。",
        "问题在输入数据，而不是学习率。",
        "学习率，我们已经调低了，不是原因。输入数据里有 NaN。",
    ],
)
def test_denial_still_works_on_segmented_chinese(text):
    points, _ = answer_coverage(text, [("lr", 1, [["learning rate", "学习率"]]), ("data", 1, [["输入数据"]])])
    lr, data = points
    assert lr.found == [] and lr.listed == [] and lr.denied == ["学习率"]
    assert data.found == ["输入数据"]


def test_a_denial_after_an_aside_in_english():
    points, percent = answer_coverage(
        "The learning rate, which we lowered last week, is not the cause. The input data has NaN rows.",
        [("lr", 1, [["learning rate", "lr"]]), ("data", 1, [["input data"]])],
    )
    assert points[0].found == [] and points[0].denied == ["learning rate"] and percent == 50


def test_an_aside_that_affirms_keeps_the_term():
    points, _ = answer_coverage(
        "The learning rate, which is far too high, is the cause of the divergence.",
        [("lr", 1, [["learning rate", "lr"]])],
    )
    assert points[0].found == ["learning rate"] and points[0].denied == []


def test_the_dictionary_holds_bank_and_lab_terms():
    terms = segmenter.catalog_terms()
    assert "梯度裁剪" in terms  # nan-loss-checklist
    assert "次正规" in terms  # lab nan-fp16-log-epsilon's diagnosis rubric
    assert all("{{" not in term for term in terms)


def test_building_the_tokenizer_prints_nothing_and_caches_under_the_var_dir(tmp_path):
    env = {**os.environ, "FAULTLINE_VAR_DIR": str(tmp_path), "PYTHONWARNINGS": "error::DeprecationWarning"}
    done = subprocess.run(
        [sys.executable, "-c", "from questions.segmenter import warm; warm()"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == ""
    assert list(tmp_path.glob("jieba*.cache"))


# "缓存命中" (cache hit) is no bank term: the catalog's dictionary cuts "缓存命中率" into 缓存/命中率, so the
# term would end inside a word. Once a rubric names it, it is a word while that rubric scores.
NEW_TERM, SAID = "缓存命中", "我认为缓存命中率低是原因，数据每次都要重新读取。"


def test_a_rubric_term_no_file_holds_is_a_word_while_that_rubric_scores():
    assert NEW_TERM not in segmenter.catalog_terms()
    assert found(SAID, ["cache hit", NEW_TERM]) == [NEW_TERM]
    # Scoped to the rubric: the process's own dictionary is unchanged, so another rubric scored afterwards
    # segments exactly as before.
    assert segmenter.tokenizer().FREQ.get(NEW_TERM, 0) == 0
    assert found(SAID, ["缓存命"]) == []


def test_segmentation_does_not_depend_on_what_was_scored_before():
    before = answer_coverage(SAID, [("p", 1, [["命中率", "缓存"]])])
    found(SAID, ["cache hit", NEW_TERM])
    after = answer_coverage(SAID, [("p", 1, [["命中率", "缓存"]])])
    assert before[1] == after[1] and before[0][0].found == after[0][0].found

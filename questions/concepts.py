"""Which rubric concepts a free-text answer covers, in either language.

A concept is a list of synonyms. English synonyms match as stemmed word
sequences, so "learning rates" in an answer matches the synonym "learning
rate"; synonyms with code characters (``clip_grad_norm_``, ``torch.isfinite``) and Chinese synonyms match
as substrings of the normalised text. Deterministic, so a candidate can see
exactly why a point counted.

A concept earns full credit only inside a sentence that says something: English with enough verbs and
small words among its words, a Chinese clause with a verb or particle, a line of real code, a number or
a relation. Terms that appear only in bare lists ("fp16; GradScaler; bf16") earn ``LIST_CREDIT`` of a
concept each, so a keyword list scores a small fraction and its feedback says why. A rubric point may
also name misconceptions: a sentence that asserts one (and does not deny it) takes the point away.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from questions.textsearch import CJK_RUN_RE, normalize, stem

WORD_RE = re.compile(r"[a-z0-9]+")
PLAIN_PHRASE_RE = re.compile(r"^[a-z0-9 \-]+$")
LIST_CREDIT = 0.25
# Sentence ends: ". " (not the dot of torch.isfinite or 1.5), other end marks, semicolons, line breaks.
SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|[;；。！？!?\n]+")
# Words that make a group of terms into a statement. Deliberately broad: the rule only has to tell a
# sentence from a list of nouns, not judge whether the sentence is right.
VERB_CUES = frozenset(
    """is are was were be been being am isn aren wasn weren do does did don doesn didn done has have had
    hasn haven can cannot could couldn will won would wouldn should shouldn must may might shall
    cause causes caused causing make makes made mean means meant show shows showed shown lead leads led
    give gives gave get gets got become becomes became keep keeps kept stop stops stopped use uses used
    using need needs needed turn turns turned run runs ran grow grows grew rise rises rose drop drops
    dropped fall falls fell fail fails failed return returns returned overflow overflows overflowed
    underflow underflows wait waits waited hang hangs hung block blocks blocked hold holds held send
    sends sent split splits take takes took put puts set sets let lets fix fixes fixed avoid avoids
    prevent prevents reduce reduces increase increases add adds remove removes check checks compare
    compares change changes changed move moves moved call calls called write writes wrote read reads
    depends depend happens happen happened appears appear appeared because therefore so since if when
    while whereas unless until than via lower raise normalise normalize standardise standardize clip cast
    enable disable print dump profile restart retry replace rewrite load save test measure verify inspect
    try switch wrap pin drain cordon isolate reproduce capture collect monitor alert limit cap shard skip""".split()
)
# Small words that prose has and a list of terms lacks ("SSO with the bank's identity provider").
FUNCTION_WORDS = frozenset(
    "the a an of to in on with by for from per before after between into at as than each every all its their "
    "this that these those only not no across over under within without around through against about".split()
)
ZH_CUES = re.compile(
    r"是|会|能|要|导致|造成|引起|因为|所以|因此|如果|使|让|把|被|用|有|在|出现|变成|变为|超过|低于|高于|等于|"
    r"需要|可以|应该|不能|减少|增加|降低|提高|发现|说明|表明|看到|检查|对比|比较|保证|避免|防止|解决|修复|"
    r"等待|卡住|阻塞|溢出|下溢|释放|占用|增长|上升|下降|做|到|给|对|为|从|向|按|将|再|先|并|而|则|就|都|也|还|才|的|"
    r"部署|执行|运行|调用|设置|配置|开启|关闭|记录|上报|一个|每个|所有|提供|允许|加入|退出|使用|支持|包括|包含|"
    r"查看|看|或|以|及|中|上|下|内|时|后|前|里|通过|经过|遵循|按照|进行|打上|产出|去掉|保持|监控|隔离|授权|访问|"
    r"放在|开放|分配|互联|追踪|注册|匹配|共享|验证|读取|腾出|容纳|切分|拆分|合并|缓存|压缩|量化"
)
# A number on its own (not the 16 of fp16) or a relation sign.
RELATION_RE = re.compile(r"(?<![a-z_\d.])\d+(?:\.\d+)?(?![a-z_\d])|[=<>≤≥≈→×÷]")
CJK_CHAR_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
# A line of code: a call, an assignment, an attribute, an index or a shell flag, not words in a fence.
CODE_RE = re.compile(r"[A-Za-z_][\w.]*\(|\w\s*=|\w\.\w|\w\[|(?:^|\s)--?\w")


def sentences(text: str) -> list[tuple[str, bool]]:
    """(sentence, is it a line of code); code lines and table rows stay whole lines."""
    parts: list[tuple[str, bool]] = []
    in_code = False
    for line in text.splitlines():
        if FENCE_RE.match(line):
            in_code = not in_code
            continue
        if in_code:
            if line.strip():
                parts.append((line.strip(), bool(CODE_RE.search(line))))
            continue
        if line.lstrip().startswith("|"):
            if line.strip(" |-:"):
                parts.append((line.strip(), False))  # a table row must read as a statement, like prose
            continue
        parts.extend((part.strip(), False) for part in SENTENCE_END_RE.split(line) if part and part.strip())
    return parts


PRONOUNS = frozenset("and or it we i you they he she one".split())
# Share of a sentence's words that must be verbs, small words or numbers for it to count as a statement.
# Prose runs at 30-50 %; a list of terms, even with one verb slipped in, stays near 5 %.
CLAIM_DENSITY = 0.12
ZH_CLAUSE_SPLIT_RE = re.compile(r"[,，、/;；:：()（）]")


def makes_claim(sentence: str) -> bool:
    """A statement in a few words, not a bare group of terms: enough verbs, small words or numbers.

    English and Chinese are judged apart, each on its own words: a Chinese sentence full of English
    product names is still Chinese prose if its Chinese part reads as one."""
    folded = normalize(sentence)
    words = WORD_RE.findall(folded)
    numbers = len(RELATION_RE.findall(folded))
    cues = sum(word in VERB_CUES or word in FUNCTION_WORDS or word in PRONOUNS for word in words)
    if len(words) >= 4 and (cues + numbers) / len(words) >= CLAIM_DENSITY:
        return True
    # Chinese: some clause between list marks reads as a statement (a cue among a few characters), so
    # "学习率，降低，梯度裁剪" stays a list while "架构是模型的函数形式：有哪些层、……" is prose that enumerates.
    for clause in ZH_CLAUSE_SPLIT_RE.split(folded):
        size = len(CJK_CHAR_RE.findall(clause)) + 2 * len(WORD_RE.findall(clause))  # an English word ~ 2 characters
        if size >= 6 and (ZH_CUES.search(clause) or RELATION_RE.search(clause)):
            return True
    return False


@dataclass(frozen=True)
class PointCoverage:
    key: str
    weight: int
    found: list[str]  # the synonym that matched in a sentence that makes a claim, one per concept found
    missing: list[str]  # the first synonym of each concept not found
    fraction: float
    listed: list[str] = field(default_factory=list)  # named only in a bare list of terms: LIST_CREDIT each
    evidence: list[str] = field(default_factory=list)  # the sentence that earned each found concept
    contradicted: list[dict] = field(default_factory=list)  # {sentence, en, zh}: a misconception it states

    def as_dict(self) -> dict:
        return asdict(self)


class AnswerText:
    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = normalize(text)
        self.squashed = re.sub(r"\s+", "", self.folded)
        self.stems = " " + " ".join(stem(w) for w in WORD_RE.findall(self.folded)) + " "

    def position(self, synonym: str) -> tuple[int, int] | None:
        """(start, end) in the folded text of the synonym's first match, or None."""
        if not self.contains(synonym):
            return None
        term = normalize(synonym).strip()
        if PLAIN_PHRASE_RE.match(term) and not CJK_RUN_RE.search(term):
            wanted = [stem(w) for w in WORD_RE.findall(term)]
            words = list(WORD_RE.finditer(self.folded))
            for i in range(len(words) - len(wanted) + 1):
                if [stem(m.group()) for m in words[i : i + len(wanted)]] == wanted:
                    return words[i].start(), words[i + len(wanted) - 1].end()
        at = self.folded.find(term)
        if at < 0:  # Chinese matched with spaces in between: locate its first character
            at = self.folded.find(re.sub(r"\s+", "", term)[:1])
        return (at, at + len(term)) if at >= 0 else (0, len(self.folded))

    def contains(self, synonym: str) -> bool:
        term = normalize(synonym).strip()
        if not term:
            return False
        if CJK_RUN_RE.search(term):
            return re.sub(r"\s+", "", term) in self.squashed
        if PLAIN_PHRASE_RE.match(term):
            words = [stem(w) for w in WORD_RE.findall(term)]
            return f" {' '.join(words)} " in self.stems
        return term in self.folded


NEGATION_WORDS = frozenset("not no never nor neither cannot doesn don isn aren wasn weren won didn hasn haven".split())
NEGATION_PHRASES = ("rather than", "instead of", "as opposed to")
ZH_NEGATION_RE = re.compile(r"不|没|未|并非|而非|无法|别")
# Words that call the whole statement wrong, wherever they stand ("… are misleading", "这是误导").
REJECTION_WORDS = frozenset("misleading wrong myth incorrect false mistaken misconception".split())
ZH_REJECTION_RE = re.compile(r"误导|错误|误区|谬误|说法不对")


def denies(folded: str) -> bool:
    """Does this stretch of text deny or contrast ("is not", "rather than", "不是", "而不是")?"""
    if any(word in NEGATION_WORDS for word in WORD_RE.findall(folded)):
        return True
    return any(phrase in folded for phrase in NEGATION_PHRASES) or bool(ZH_NEGATION_RE.search(folded))


def rejects(folded: str) -> bool:
    return any(word in REJECTION_WORDS for word in WORD_RE.findall(folded)) or bool(ZH_REJECTION_RE.search(folded))


class Answer:
    """An answer as its claim-making sentences and its whole text."""

    def __init__(self, text: str) -> None:
        self.whole = AnswerText(text)
        # A line of code is a statement in its own form (a call, an assignment); words in a code fence or a
        # table row are judged like prose.
        self.claims = [AnswerText(part) for part, code in sentences(text) if code or makes_claim(part)]

    def states(self, pattern: list[list[str]]) -> str | None:
        """The first claim that asserts ``pattern``: a synonym of every group, with no denial between the
        first and the last of them (nor just before), and nothing in the sentence calling it wrong.
        "1F1B does not reduce the bubble" and "diagrams showing 1F1B with a smaller bubble are misleading"
        deny it; "the CPU is idle, which means I/O bound, so the main thread is not it" asserts it."""
        for claim in self.claims:
            spans = []
            for group in pattern:
                hits = [claim.position(s) for s in group]
                hits = [h for h in hits if h is not None]
                if not hits:
                    break
                spans.append(min(hits))
            else:
                folded = claim.folded
                start, end = min(s for s, _ in spans), max(e for _, e in spans)
                window = folded[max(0, start - 12) : end]
                if not denies(window) and not rejects(folded):
                    return claim.text
        return None

    def claim_with(self, synonym: str) -> str | None:
        """The first claim-making sentence that contains the synonym."""
        return next((claim.text for claim in self.claims if claim.contains(synonym)), None)


def point_coverage(
    answer: Answer, key: str, weight: int, concepts: list[list[str]], misconceptions: list[dict] | None = None
) -> PointCoverage:
    found, listed, missing, evidence = [], [], [], []
    for synonyms in concepts:
        hit = next(((s, sentence) for s in synonyms if (sentence := answer.claim_with(s)) is not None), None)
        if hit is not None:
            found.append(hit[0])
            if hit[1][:300] not in evidence:
                evidence.append(hit[1][:300])
            continue
        bare = next((s for s in synonyms if answer.whole.contains(s)), None)
        if bare is not None:
            listed.append(bare)
        else:
            missing.append(synonyms[0])
    credit = len(found) + LIST_CREDIT * len(listed)
    fraction = credit / len(concepts) if concepts else 0.0
    contradicted = []
    for wrong in misconceptions or []:
        sentence = answer.states(wrong["pattern"])
        if sentence is not None:
            contradicted.append({"sentence": sentence[:300], "en": wrong["en"], "zh": wrong["zh"]})
            fraction = max(0.0, fraction - float(wrong.get("penalty", 1.0)))
    return PointCoverage(
        key=key, weight=weight, found=found, missing=missing, fraction=round(fraction, 3), listed=listed,
        evidence=evidence, contradicted=contradicted,
    )  # fmt: skip


def answer_coverage(text: str, rubric: list[tuple]) -> tuple[list[PointCoverage], int]:
    """Coverage of each rubric point and the weighted percentage over the whole rubric.

    ``rubric``: (key, weight, concepts) or (key, weight, concepts, misconceptions) per point."""
    answer = Answer(text)
    points = [point_coverage(answer, *point) for point in rubric]
    total = sum(p.weight for p in points)
    percent = round(100 * sum(p.weight * p.fraction for p in points) / total) if total else 0
    return points, percent


def point_report(point: dict, label: str) -> dict:
    """One rubric point (``PointCoverage.as_dict()``, as practice answers and diagnoses store it) as
    ``scoreanswer``/``scorediagnosis`` print it: a stable shape for reviewers."""
    contradicted = point.get("contradicted") or []
    if contradicted:
        state = "contradicted"
    else:
        state = "found" if point["fraction"] >= 1 else "partly found" if point["fraction"] > 0 else "missed"
    return {
        "key": point["key"], "label": label, "state": state, "fraction": point["fraction"],
        "weight": point["weight"], "found": point["found"], "listed": point.get("listed", []),
        "missing": point["missing"], "evidence": point.get("evidence", []),
        "misconception": contradicted[0] if contradicted else None,
    }  # fmt: skip

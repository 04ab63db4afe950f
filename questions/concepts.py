"""Which rubric concepts a free-text answer covers, in either language.

A concept is a list of synonyms. English synonyms match as stemmed word
sequences, so "learning rates" in an answer matches the synonym "learning
rate"; synonyms with code characters (``clip_grad_norm_``, ``torch.isfinite``) match as substrings of the
normalised text. Chinese synonyms match whole words of the segmented text (``questions.segmenter``): a
match must start and end on word boundaries, so "数据" is not found in "元数据" nor "对数" in "对数据",
while "读取自己的分片" still matches across its four words. Deterministic, so a candidate can see
exactly why a point counted.

A concept earns full credit only inside a sentence that says something: English with enough verbs and
small words among its words, a Chinese clause with a verb or particle, a line of real code, or a relation
(a number helps only beside a verb or a relation). A verb inside one of the rubric's own terms
("underflow", "检查 nan", the 对 of 对数) names a concept and says nothing about it. Terms that appear
only in bare lists ("fp16; GradScaler; bf16") earn ``LIST_CREDIT`` of a concept each, so a keyword list
scores a small fraction and its feedback says why. Terms dressed up as prose are lists too:
- a sentence whose items, between commas or "and"/"or"/"或者" (or 和/与 between two terms), are bare names of
  several rubric points ("It is the lr, the isnan, the GradScaler, …", "the lr and the batch and the eps all
  matter", the same cut into short sentences);
- three or more sentences of one template once their terms are cut out ("The lr and lowering it matter. The
  batch and isfinite matter. …", "I would look at X. I would look at Y. …");
- a sentence that says of its terms only that they matter ("X is crucial.", "Y plays a role.", "Z 很重要。").

A term the answer denies earns nothing: "it isn't the learning rate", "rather than fp16", "不是学习率",
"X is not the cause". Only denials of identity and contrasts count, within the clause and right next to the
term; negated actions ("don't use --privileged", "does not halve") are how answers say what to avoid.

A rubric point may also name misconceptions: a sentence that asserts one (and does not deny it) takes the
point away. "not only … but also" / "不仅……而且" stresses a claim rather than denying it; a negation
inside the pattern's own terms ("CPU 不高") or inside another word ("不同", "级别", ``no_sync``) denies
nothing; a pattern group of "!" terms excludes sentences that name one of them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from itertools import product

from questions.segmenter import boundaries, vocabulary
from questions.textsearch import CJK, CJK_RUN_RE, normalize
from questions.textsearch import stem as search_stem

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
    r"放在|开放|分配|互联|追踪|注册|匹配|共享|验证|读取|腾出|容纳|切分|拆分|合并|缓存|压缩|量化|于|决定|依赖"
)
# A number on its own (not the 16 of fp16) or a relation sign.
RELATION_RE = re.compile(r"(?<![a-z_\d.])\d+(?:\.\d+)?(?![a-z_\d])|[=<>≤≥≈→×÷]")
CJK_CHAR_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
CJK_GAP_RE = re.compile(r"[\s*`]+")
# A line of code: a call, an assignment, an attribute, an index or a shell flag, not words in a fence.
CODE_RE = re.compile(r"[A-Za-z_][\w.]*\(|\w\s*=|\w\.\w|\w\[|(?:^|\s)--?\w")


def sentences(text: str) -> list[tuple[str, bool]]:
    """(sentence, is it a line of code); code lines and table rows stay whole lines."""
    parts: list[tuple[str, bool]] = []
    in_code = False
    for line in unwrap(text.splitlines()):
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


# A hard-wrapped sentence: the line breaks mid-sentence (no end mark; a comma or a word, English going on in
# lower case, Chinese after a comma), and the next line is neither a list item nor a heading.
WRAPPED_END_RE = re.compile(r"[A-Za-z0-9,)]\s*$")
WRAPPED_START_RE = re.compile(r"\s*[a-z(]")
ZH_WRAPPED_RE = re.compile(r"[，,]\s*$")
ZH_START_RE = re.compile(rf"\s*[{CJK}]")
NOT_PROSE_RE = re.compile(r"\s*(?:[-*+>#|]|\d+[.)]\s)")


def unwrap(lines: list[str]) -> list[str]:
    """Lines with hard-wrapped prose joined back into one line each, so a sentence is judged whole."""
    joined: list[str] = []
    in_code = False
    for line in lines:
        if FENCE_RE.match(line):
            in_code = not in_code
        elif joined and not in_code and line.strip() and not NOT_PROSE_RE.match(line):
            previous = joined[-1]
            prose = previous.strip() and not FENCE_RE.match(previous) and not previous.lstrip().startswith(("#", "|"))
            english = WRAPPED_END_RE.search(previous) and WRAPPED_START_RE.match(line)
            chinese = ZH_WRAPPED_RE.search(previous) and ZH_START_RE.match(line)
            if prose and (english or chinese):
                joined[-1] = f"{previous.rstrip()} {line.strip()}"
                continue
        joined.append(line)
    return joined


PRONOUNS = frozenset("and or it we i you they he she one".split())
# Share of a sentence's words that must be verbs, small words or numbers for it to count as a statement.
# Prose runs at 30-50 %; a list of terms, even with one verb slipped in, stays near 5 %.
CLAIM_DENSITY = 0.12
ZH_CLAUSE_SPLIT_RE = re.compile(r"[,，、/;；:：()（）]")


# Tokens a sentence is judged by: identifiers, hyphenated and slashed names stay whole, so "all-gather",
# "I/O", "no_sync", "set_", "ZeRO-3" and "level1" are names, not the small words or numbers inside them.
CLAIM_TOKEN_RE = re.compile(r"[a-z0-9]+(?:[_./\-][a-z0-9]+)*_?")
NUMBER_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?")
RELATION_SIGN_RE = re.compile(r"[=<>≤≥≈→×÷]")
# "num_workers=0" is a setting named in a list, not a relation.
KEYWORD_ARGUMENT_RE = re.compile(r"[a-z0-9]*_[a-z0-9_]*=(?!=)")
# Chinese nouns that hold a one-character cue ("对" of 对数, "并" of 并行, "内" of 内存): blanked before cues
# are looked for, so a list of such nouns stays a list.
ZH_NOUN_COMPOUNDS_RE = re.compile(
    r"对数|对象|对齐|并行|并发|向量|内存|内核|时间|时钟|时延|后端|前端|前向|上下文|中断|中间|中心|以太网|会话|能力|"
    r"用户|有效|在线|下游|上游|为止|都市|还原|才能"
)
# Chinese clauses end at list marks, and at a space between two Chinese characters: Chinese prose has no
# spaces between words, so "输入数据 检查 nan" is three keywords, not a clause.
ZH_SEGMENT_SPLIT_RE = re.compile(rf"[,，、;；:：()（）]|(?<![a-z0-9])/|/(?![a-z0-9])|(?<=[{CJK}])\s+(?=[{CJK}])")


def blank_noun_compounds(text: str) -> str:
    """``text`` with the Chinese nouns that hold a one-character cue blanked, offsets kept."""
    return ZH_NOUN_COMPOUNDS_RE.sub(lambda m: "_" * len(m.group()), text)


ZH_LEAD_VERB_RE = re.compile(rf"[\s*`\-]*((?:{ZH_CUES.pattern})(?<=[{CJK}]{{2}}))(?=\s*[\w{CJK}])")


def _overlaps(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(a < span[1] and span[0] < b for a, b in spans)


def makes_claim(sentence: str, terms: list[tuple[int, int]] | None = None) -> bool:
    """A statement in a few words, not a bare group of terms: enough verbs, small words or numbers.

    English and Chinese are judged apart, each on its own words: a Chinese sentence full of English
    product names is still Chinese prose if its Chinese part reads as one.

    ``terms``: (start, end) in the normalised sentence of the rubric's own terms. A verb or pronoun inside
    one ("underflow", "skip", "does not halve", "检查 nan", "对数") names a concept and says nothing about it.
    A number only adds to a sentence that has a verb or a relation: "65504" in a list is one more term."""
    folded = normalize(sentence)
    terms = terms or []
    tokens = [m for m in CLAIM_TOKEN_RE.finditer(folded)]
    cues = numbers = 0
    for m in tokens:
        word = m.group()
        if word in FUNCTION_WORDS:  # "learned from raw data": a phrase's small words still read as prose
            cues += 1
        elif _overlaps(m.span(), terms):
            continue
        elif word in VERB_CUES or word in PRONOUNS:
            cues += 1
        elif NUMBER_TOKEN_RE.fullmatch(word):
            numbers += 1
    kwargs = [m.span() for m in KEYWORD_ARGUMENT_RE.finditer(folded)]
    relations = sum(
        not _overlaps(m.span(), terms) and not _overlaps((m.start() - 1, m.end()), kwargs)
        for m in RELATION_SIGN_RE.finditer(folded)
    )
    if len(tokens) >= 4 and (cues or relations) and (cues + numbers + relations) / len(tokens) >= CLAIM_DENSITY:
        return True
    # Chinese: some clause between list marks reads as a statement (a cue among a few characters), so
    # "学习率，降低，梯度裁剪" stays a list while "架构是模型的函数形式：有哪些层、……" is prose that enumerates.
    if not CJK_CHAR_RE.search(folded):
        return False
    cue_text = blank_noun_compounds(folded)
    start = 0
    for cut in [*ZH_SEGMENT_SPLIT_RE.finditer(folded), None]:
        end = cut.start() if cut else len(folded)
        clause = folded[start:end]
        cjk = len(CJK_CHAR_RE.findall(clause))
        size = cjk + 2 * len(WORD_RE.findall(clause))  # an English word ~ 2 characters
        if cjk and size >= 6:
            signs = [*ZH_CUES.finditer(cue_text, start, end), *RELATION_RE.finditer(folded, start, end)]
            if any(not _overlaps(m.span(), terms) for m in signs):
                return True
        # A verb and its object is an instruction however short: "记录血缘", "降低学习率" (not "降低" alone).
        lead = ZH_LEAD_VERB_RE.match(cue_text, start, end)
        if lead and not _overlaps(lead.span(1), terms) and len(CJK_CHAR_RE.findall(folded, lead.end(), end)) >= 2:
            return True
        start = cut.end() if cut else end
    return False


# British spellings folded to American ones before stemming, so "minimise" meets a "minimize" synonym.
BRITISH_RE = re.compile(
    r"(?<=[a-z]{3})is(?=e$|ed$|es$|ing$|ation$|ations$|er$|ers$)|(?<=[a-z]{2})ys(?=e$|ed$|es$|ing$)"
)


# Endings whose "e" the search stemmer keeps on the base form but drops in "-ed"/"-es"/"-ing". Not -te, -ne,
# -de: dropping those would make "note" meet "not", "plane" "plan", "mode" "mod".
SILENT_E = ("che", "se", "ze", "ce", "ge", "le", "ve", "re", "pe", "ke", "me", "ue")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The search stemmer, plus two folds for matching an answer to a rubric: British -ise/-yse to -ize/-yze,
    and a final silent "e" dropped after stemming, so "cache"/"caches"/"cached" and "fuse"/"fused" meet.
    Answer and synonym go through the same function, so a fold that over-reaches stays consistent."""
    word = BRITISH_RE.sub(lambda m: m.group()[0] + "z", word)
    stemmed = search_stem(word)
    return stemmed[:-1] if len(stemmed) >= 4 and stemmed.endswith(SILENT_E) and stemmed.isalpha() else stemmed


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
    denied: list[str] = field(default_factory=list)  # a synonym of a concept not found that a claim named, denied

    def as_dict(self) -> dict:
        return asdict(self)


class AnswerText:
    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = normalize(text)
        # Chinese terms match across spaces and Markdown emphasis: "参数的**个数**" has "参数的个数".
        self.squashed = CJK_GAP_RE.sub("", self.folded)
        self.stems = " " + " ".join(stem(w) for w in WORD_RE.findall(self.folded)) + " "
        self._word_cache: tuple[list[re.Match], list[str]] | None = None
        self._negation_cache: list[tuple[int, int]] | None = None
        self._cuts: frozenset[int] | None = None  # word boundaries, segmented once a Chinese term is looked for
        self._breaks: list[tuple[int, int]] = []
        self.index = 0  # where it stands among the answer's sentences
        self.terms: list[tuple[int, int]] = []  # spans of the rubric's terms, set when judged as a sentence

    def contains(self, synonym: str) -> bool:
        kind, key = _term(synonym)
        if kind == "cjk":
            return key in self.squashed and bool(self.spans(synonym))
        if kind == "plain":
            return f" {' '.join(key)} " in self.stems
        return bool(key) and key in self.folded

    def spans(self, synonym: str) -> list[tuple[int, int]]:
        """(start, end) in the folded text of every match of the synonym, matched as ``contains`` does."""
        kind, key = _term(synonym)
        if kind == "cjk":
            if key not in self.squashed:
                return []
            # Whole words only: "数据" is not said in "元数据", nor "对数" in "对数据".
            if self._cuts is None:
                self._cuts = boundaries(self.folded)
            cuts = self._cuts
            return [
                m.span() for m in _spaced_pattern(key).finditer(self.folded) if m.start() in cuts and m.end() in cuts
            ]
        if kind == "plain":
            words, stems = self._words()
            n = len(key)
            return [
                (words[i].start(), words[i + n - 1].end())
                for i in range(len(words) - n + 1)
                if stems[i : i + n] == list(key)
            ]
        if not key:
            return []
        return [(m.start(), m.start() + len(key)) for m in re.finditer(re.escape(key), self.folded)]

    def _words(self) -> tuple[list[re.Match], list[str]]:
        if self._word_cache is None:
            words = list(WORD_RE.finditer(self.folded))
            self._word_cache = (words, [stem(m.group()) for m in words])
        return self._word_cache

    def affirms(self, synonym: str, point_terms: list[str]) -> bool:
        """Does some match of ``synonym`` here stand outside a denial? "it isn't the learning rate",
        "rather than fp16", "不是学习率", "而不是学习率" deny the term right behind them; "X is not the cause",
        "X 不是原因" deny the term before them; neither reaches past a clause break ("not X but Y"). A
        negation that overlaps one of the point's own terms ("is not needed", "不是更小") is what the point
        claims, so it denies nothing for that point."""
        negations = self._negations()
        if not negations:
            return True
        shields = None
        for start, end in self.spans(synonym):
            clause_start, clause_end = self._clause(start, end)
            active = [(s, e) for s, e in negations if clause_start <= s and e <= clause_end]
            if active and shields is None:
                shields = [span for term in point_terms for span in self.spans(term)]
            active = [(s, e) for s, e in active if not any(a < e and s < b for a, b in shields or [])]
            before = any(e <= start and close_after(self.folded[e:start]) for _s, e in active)
            after = any(
                s >= end and close_before(self.folded[end:s]) and POST_DENIAL_RE.match(self.folded, s)
                for s, _e in active
            )
            if not before and not after and not denied_past_aside(self.folded, end):
                return True
        return False

    def _negations(self) -> list[tuple[int, int]]:
        if self._negation_cache is None:
            blanked = NOT_A_DENIAL_RE.sub(lambda m: " " * len(m.group()), self.folded)
            self._negation_cache = [m.span() for m in NEGATOR_RE.finditer(blanked)]
            self._breaks = [m.span() for m in CLAUSE_BREAK_RE.finditer(blanked)]
        return self._negation_cache

    def _clause(self, start: int, end: int) -> tuple[int, int]:
        """The clause around a match: from the last break before it to the first break after it."""
        left = max((e for s, e in self._breaks if e <= start), default=0)
        right = min((s for s, e in self._breaks if s >= end), default=len(self.folded))
        return left, right


@lru_cache(maxsize=8192)
def _term(synonym: str) -> tuple[str, object]:
    """How a synonym is matched, worked out once per synonym: ("cjk", the term without spaces), ("plain",
    its word stems) or ("code", the folded term, matched as a substring)."""
    term = normalize(synonym).strip()
    if term and CJK_RUN_RE.search(term):
        return "cjk", re.sub(r"\s+", "", term)
    if term and PLAIN_PHRASE_RE.match(term):
        return "plain", tuple(stem(w) for w in WORD_RE.findall(term))
    return "code", term


@lru_cache(maxsize=4096)
def _spaced_pattern(squashed: str) -> re.Pattern:
    """A Chinese term matched with any whitespace between its characters, as ``contains`` matches it."""
    return re.compile(CJK_GAP_RE.pattern.replace("+", "*").join(re.escape(ch) for ch in squashed))


# "not only … but also", "不仅……而且": emphasis, not a denial, when an "also" part follows; without one,
# "does not just slow training" / "并不只是变慢" does deny "just slows". "is not the same as", "不等于": a
# comparison; "whether or not", "不是 X 就是 Y" (either … or). Blanked before negations are looked for.
NOT_A_DENIAL_RE = re.compile(
    r"(?:\bnot\s+(?:only|just|merely|simply)\b|不仅|不只|不但|不光|不单)"
    r"(?=.*?(?:\bbut\b|\balso\b|\bas\s+well\b|而且|并且|还|也))|"
    r"\bno\s+matter\b|\bnot\s+(?:the\s+)?same\b|\bnot\s+equal|\bor\s+not\b|\bif\s+not\b|不等于|不同于|是不是|"
    r"不是(?=[^。;]*?就是)"  # 不是 X 就是 Y: either X or Y
)
# Denials of identity and contrasts, which say a term is *not* the answer: "is not", "isn't", "not the",
# "bf16, not fp16", "rather than", "不是", "并非", "而不是". Negated actions ("don't use --privileged",
# "does not halve", "no GradScaler needed", "不要用 --privileged") are left alone: they are how answers
# state what to avoid, and rubric points are often written that way.
NEGATOR_RE = re.compile(
    r"\b(?:is|are|was|were|be|been|s)\s+(?:not|never|neither)\b|\b(?:isn|aren|wasn|weren)\W*t\b|"
    r"\bnot\s+(?:the|a|an|because|due|caused|from|in|at|on)\b|(?<=,)\s*not\b|\bnor\b|"
    r"\b(?:rather\s+than|instead\s+of|as\s+opposed\s+to)\b|"
    r"而不是|而非|不是|并非|并不是|不在于"
)
# Where a denial's reach ends: punctuation, and words that start another clause ("not X but Y").
CLAUSE_BREAK_RE = re.compile(
    r"[,:()\[\]、：（）]|\b(?:but|however|yet|because|since|so|unless|until|while|whereas|when|which|where|"
    r"if|then|and|though|although)\b|但是|但|而是|因为|所以|因此|如果|只要|否则|然后|同时|却"
)
# Words that may stand between a denial and the term it denies: "isn't really the learning rate", "not due
# to the data", "并非由学习率引起".
GAP_FILLER = frozenset(
    "the a an really actually just simply merely due to of by because from in on this that your our my its their "
    "any some".split()
)


def close_after(gap: str) -> bool:
    """Is a term this close behind a denial that the denial is about it? At most one word besides fillers
    ("is not a high learning rate"), or two Chinese characters ("不是因为学习率"): "loss scaling is not needed
    with bf16" denies "needed", not "bf16"."""
    return sum(word not in GAP_FILLER for word in WORD_RE.findall(gap)) <= 1 and len(CJK_CHAR_RE.findall(gap)) <= 2


def close_before(gap: str) -> bool:
    """Is a term this close before "is not the cause" that it is the subject denied ("the learning rate
    here is not the cause", "学习率本身不是原因")?"""
    return len(WORD_RE.findall(gap)) <= 3 and len(CJK_CHAR_RE.findall(gap)) <= 4


# A denial after the term that rejects the term itself: "X is not the cause", "X 不是原因".
POST_DENIAL_RE = re.compile(
    r"(?:(?:is|are|was|were|s)\s+(?:not|never)|isn\W*t|aren\W*t|wasn\W*t|weren\W*t)\s+(?:really\s+|actually\s+)?(?:the\s+|a\s+|to\s+)?"
    r"(?:(?:real|root|main|actual)\s+)?(?:cause|culprit|problem|issue|reason|bottleneck|fix|answer|it|blame|"
    r"responsible|relevant|needed|necessary|required|explanation)\b|"
    r"(?:不是|并不是|并非)(?:真正的|主要)?(?:原因|根因|问题所在|问题|瓶颈|罪魁祸首|元凶|关键|主因|解决办法|必需|必要)"
)


# An aside between a term and its denial: "the lr, which we lowered, is not the cause", "学习率，我们已经调低了，
# 不是原因". One comma-closed clause of a few words, then the denial of the term itself.
ASIDE_RE = re.compile(r"\s*[,、]\s*[^,、.;:!?。；：！？\n]{1,40}?,\s*")
ASIDE_WORDS = 8


def denied_past_aside(folded: str, end: int) -> bool:
    """Is the term ending at ``end`` the subject of "is not the cause" / "不是原因" after a one-clause aside?
    The aside must be short (eight words, or as many Chinese characters as fit in 40), so a list of terms
    ("the lr, the data, the eps, is not it") is not read as one."""
    aside = ASIDE_RE.match(folded, end)
    if aside is None or len(WORD_RE.findall(aside.group())) > ASIDE_WORDS:
        return False
    return bool(POST_DENIAL_RE.match(folded, aside.end()))


NEGATION_WORDS = frozenset(
    "not no never nor neither cannot doesn don isn aren wasn weren won didn hasn haven couldn shouldn wouldn "
    "mustn needn".split()
)
NEGATION_PHRASES = ("rather than", "instead of", "as opposed to")
CANT_RE = re.compile(r"\bcan\W{0,2}t\b")
ZH_NEGATION_RE = re.compile(r"不|没|未|并非|而非|无法|别")
# Words that hold a negation character without denying anything: "不同", "显存不足", "忽略不计", "级别",
# "识别", "不过" (however). Blanked before denials are looked for.
ZH_NOT_NEGATION_RE = re.compile(
    r"不同|不足|不断|不少|不久|不过|不管|不论|不计|不错|不一致|不均|不稳定|不确定|不可用|未来|"
    r"[级区分识特类差告个性鉴辨派组]别"
)
# A denial after a Chinese verb: "解决不了", "修不好", "去不掉".
ZH_POST_NEGATION_RE = re.compile(r"\s*(?:不了|不好|不掉|不到|不住|不动|不出|不成|不完|不开)")
# Where a denial before a pattern stops reaching it: "不过，…", "基本没错：…", "偶尔超时没关系，多加重试就能解决".
PRE_WINDOW = 12
PRE_BREAK_RE = re.compile(r"[,.;:!?()，。；：！？、（）]|\b(?:but|however|though|although)\b|不过|但是|但")
# Words that call the whole statement wrong, wherever they stand ("… are misleading", "这是误导"). 错误 alone
# also means "error" (错误日志, 错误率), so only its "wrong" uses count.
REJECTION_WORDS = frozenset("misleading wrong myth incorrect false mistaken misconception".split())
ZH_REJECTION_RE = re.compile(
    r"误导|误区|谬误|说法不对|是错的|是错误的|错误的(?:说法|观点|理解|认识|结论|看法|假设|做法)|"
    r"(?:说法|观点|理解|看法|结论|认识)(?:是|完全|也)?错误"
)


def denies(folded: str) -> bool:
    """Does this stretch of text deny or contrast ("is not", "rather than", "不是", "而不是")? Names keep
    their words to themselves: the "no" of ``no_sync`` denies nothing."""
    if any(word in NEGATION_WORDS for word in CLAIM_TOKEN_RE.findall(folded)) or CANT_RE.search(folded):
        return True
    unworded = ZH_NOT_NEGATION_RE.sub(lambda m: " " * len(m.group()), folded)
    return any(phrase in folded for phrase in NEGATION_PHRASES) or bool(ZH_NEGATION_RE.search(unworded))


def rejects(folded: str) -> bool:
    return any(word in REJECTION_WORDS for word in WORD_RE.findall(folded)) or bool(ZH_REJECTION_RE.search(folded))


def tightest(hits: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """One span per group, as close together as they come: "has no einsum kernel, so einsum copies to the
    host" is judged on "einsum copies to the host", not from the first "einsum"."""
    combos = 1
    for spans in hits:
        combos *= len(spans)
    if combos > 256:  # a long answer full of one term: judge from the first of each
        return [spans[0] for spans in hits]
    best: list[tuple[int, int]] = []
    best_size = None
    for choice in product(*hits):
        size = max(e for _, e in choice) - min(s for s, _ in choice)
        if best_size is None or size < best_size:
            best, best_size = list(choice), size
    return best


# A rival named as the subject's companion: what is said of it is said of the subject too ("bf16, like fp16,
# tops out at 65504", "bf16 and fp16 both overflow", "bf16 和 fp16 一样").
LIKE_BEFORE_RE = re.compile(r"(?:\b(?:just\s+|much\s+)?like|\bsame\s+as|\bsimilar\s+to|\bas\s+with)\s*$")
JOINED_RE = re.compile(r"\s*(?:,|/|、|\band\b|\bor\b|和|与|及|跟|同)\s*")
BOTH_RE = re.compile(r"\s*(?:\bboth\b|\ball\b|\balike\b|都|均|皆)")
ZH_ALIKE_BEFORE_RE = re.compile(r"(?:和|跟|与|同|像|如同)\s*$")
ZH_ALIKE_AFTER_RE = re.compile(r"\s*(?:一样|相同|相等|类似|同样)")


def companion(folded: str, rival: tuple[int, int], subjects: list[tuple[int, int]]) -> bool:
    """Is the rival at ``rival`` compared with, or joined to, a subject term rather than set against it?"""
    before = folded[max(0, rival[0] - 20) : rival[0]]
    if LIKE_BEFORE_RE.search(before):
        return True
    if ZH_ALIKE_BEFORE_RE.search(before) and ZH_ALIKE_AFTER_RE.match(folded, rival[1]):
        return True
    # Joined only with "both"/"都" after the pair: "with bf16 and fp16 the ranges differ: 65504 for fp16"
    # sets them apart.
    for a, b in subjects:
        first, second = ((a, b), rival) if b <= rival[0] else (rival, (a, b))
        if first[1] <= second[0] and JOINED_RE.fullmatch(folded[first[1] : second[0]]):
            if BOTH_RE.match(folded, second[1]):
                return True
    return False


def said_of_subject(
    said: tuple[int, int],
    subjects: list[tuple[int, int]],
    rivals: list[tuple[int, int]],
    own: list[tuple[int, int]],
    folded: str,
) -> bool:
    """Is the phrase at ``said`` said of a subject term rather than of a rival? It belongs to the nearest of
    them before it ("fp16 has a max of 65504" … "bf16"), or, with none before, the nearest after ("65504 is
    bf16's max"). A rival inside one of the pattern's own matches ("same range as fp16") is not one, nor is
    a rival named as the subject's companion ("like fp16", "bf16 and fp16", "和 fp16 一样")."""
    rivals = [span for span in rivals if not _overlaps(span, own) and not companion(folded, span, subjects)]
    holders = [(span, True) for span in subjects] + [(span, False) for span in rivals]
    before = [(span, kind) for span, kind in holders if span[1] <= said[0]]
    if before:
        return max(before, key=lambda holder: holder[0][1])[1]
    after = [(span, kind) for span, kind in holders if span[0] >= said[1]]
    return bool(after) and min(after, key=lambda holder: holder[0][0])[1]


def denied_between(folded: str, chosen: list[tuple[int, int]], own: list[tuple[int, int]]) -> bool:
    """Is there a denial among the chosen terms, just before them in their clause, or right after one
    ("解决不了")? The pattern's own words are blanked first: "CPU 不高", "预留但未分配", "does not halve"
    carry a negation that is the claim itself."""
    blanked = blank_emphasis(folded, chosen)
    for a, b in own:
        blanked = blanked[:a] + " " * (b - a) + blanked[b:]
    start, end = min(s for s, _ in chosen), max(e for _, e in chosen)
    before = blanked[max(0, start - PRE_WINDOW) : start]
    breaks = list(PRE_BREAK_RE.finditer(before))
    if breaks:
        before = before[breaks[-1].end() :]
    if denies(before + blanked[start:end]):
        return True
    return any(ZH_POST_NEGATION_RE.match(folded, e) and not ZH_NOT_NEGATION_RE.match(folded, e) for _, e in chosen)


def blank_emphasis(folded: str, spans: list[tuple[int, int]]) -> str:
    """``folded`` with each "not only"/"不仅" (and the like) that overlaps none of ``spans`` blanked out."""

    def blank(m: re.Match) -> str:
        own = any(a < m.end() and m.start() < b for a, b in spans)
        return m.group() if own else " " * len(m.group())

    return NOT_A_DENIAL_RE.sub(blank, folded)


class Answer:
    """An answer as its claim-making sentences and the rest (bare lists of terms)."""

    def __init__(self, text: str, rubric_terms: list[str] | None = None) -> None:
        """``rubric_terms``: every concept synonym of the rubric; a verb inside one does not make a claim."""
        self.whole = AnswerText(text)
        self.claims: list[AnswerText] = []
        self.lists: list[AnswerText] = []
        self.prose: list[bool] = []  # per claim: prose (may be an enumeration in disguise), not a code line
        present = [t for t in rubric_terms or [] if self.whole.contains(t)]
        # A line of code is a statement in its own form (a call, an assignment); words in a code fence or a
        # table row are judged like prose.
        for index, (part, code) in enumerate(sentences(text)):
            sentence = AnswerText(part)
            sentence.index = index
            sentence.terms = [span for t in present if sentence.contains(t) for span in sentence.spans(t)]
            if code or makes_claim(part, sentence.terms):
                self.claims.append(sentence)
                self.prose.append(not code)
            else:
                self.lists.append(sentence)
        self.lists_by_index = {bare.index: bare for bare in self.lists}

    def demote_enumerations(self, rubric_terms: list[list[str]]) -> None:
        """Count as lists the sentences that only enumerate terms of several rubric points behind one
        verb: "It is the lr, the isnan, the GradScaler, the eps, the clipping, the anomaly hook." has a
        copula and small words enough to pass ``makes_claim``, yet says nothing about any of them.

        ``rubric_terms``: every synonym of each rubric point, one list per point."""
        # Consecutive short sentences count together: "It is the lr, the isnan. It is the GradScaler, the eps."
        # is the same list cut in two.
        # A bare list between them (already a list) carries the run on.
        claims = enumerate(zip(self.claims, self.prose, strict=True))
        order = sorted(
            [(claim.index, i, is_prose) for i, (claim, is_prose) in claims]
            + [(bare.index, None, False) for bare in self.lists]
        )
        demoted: set[int] = set()
        run: list[tuple[int | None, list[str]]] = []
        for index, i, is_prose in [*order, (None, None, False)]:
            if index is not None and i is None:
                listed = ENUM_SPLIT_RE.split(self.lists_by_index[index].folded)
                run.append((None, [item for item in listed if item.strip()]))
                continue
            claim = self.claims[i] if i is not None and is_prose else None
            items = enumerated_items(claim.folded, claim.terms, minimum=2) if claim else []
            if items:
                run.append((i, items))
                continue
            bare = [item for _, run_items in run for item in run_items]
            if len(bare) >= ENUM_ITEMS and touched_points(bare, rubric_terms) >= ENUM_POINTS:
                demoted.update(j for j, _ in run if j is not None)
            run = []
        self._demote(demoted)

    def demote_templates(self) -> None:
        """Count as lists the prose sentences that repeat one template with other terms in it: "The lr and
        lowering it matter. The batch and isfinite matter. fp16 and GradScaler matter." says of every term
        the same thing, which is nothing about any of them. A template is the sentence with its rubric terms
        (and the commas, coordinators and articles between them) cut to one mark; answers in the bank's own
        words repeat one at most twice."""
        skeletons = [
            template(claim) if is_prose else None for claim, is_prose in zip(self.claims, self.prose, strict=True)
        ]
        # Sentences already counted as lists ("The isnan matters." is too short for a claim) share templates.
        counts = Counter(s for s in [*skeletons, *(template(bare) for bare in self.lists)] if s)
        demoted = {i for i, s in enumerate(skeletons) if s and counts[s] >= TEMPLATE_REPEATS}
        self._demote(demoted)

    def demote_vacuous(self) -> None:
        """Count as lists the prose sentences that say of their terms only that they matter: "The learning
        rate is important.", "fp16 and bf16 play a role.", "学习率很重要。" name terms and claim nothing."""
        self._demote(
            {
                i
                for i, (claim, is_prose) in enumerate(zip(self.claims, self.prose, strict=True))
                if is_prose and says_nothing(claim)
            }
        )

    def _demote(self, demoted: set[int]) -> None:
        self.lists.extend(claim for i, claim in enumerate(self.claims) if i in demoted)
        self.prose = [is_prose for i, is_prose in enumerate(self.prose) if i not in demoted]
        self.claims = [claim for i, claim in enumerate(self.claims) if i not in demoted]

    def states(self, pattern: list[list[str]]) -> str | None:
        """The first claim that asserts ``pattern``: a synonym of every group, with no denial between the
        first and the last of them (nor just before, in the same clause, nor a "解决不了" after), and
        nothing in the sentence calling it wrong. "1F1B does not reduce the bubble" and "diagrams showing
        1F1B with a smaller bubble are misleading" deny it; "the CPU is idle, which means I/O bound, so the
        main thread is not it" asserts it. A group whose terms start with "!" is an exclusion: a sentence
        with one of them does not state the pattern ("interleaved 1F1B reduces the bubble" is true). A group
        whose terms start with "~" names the first group's rivals: the second group's match must be said of
        the first group's term, not of a rival (see ``said_of_subject``), so "fp16 tops out at 65504, so
        switch to bf16" does not state "bf16 … 65504" while "bf16 has the same 65504 limit" does."""
        groups = [group for group in pattern if not all(term[:1] in "!~" for term in group)]
        exclusions = [term[1:] for group in pattern if all(term.startswith("!") for term in group) for term in group]
        rivals = [term[1:] for group in pattern if all(term.startswith("~") for term in group) for term in group]
        if not groups:
            return None
        for claim in self.claims:
            if any(claim.contains(term) for term in exclusions):
                continue
            hits = []
            for group in groups:
                spans = sorted({span for term in group for span in claim.spans(term)})
                if not spans:
                    break
                hits.append(spans)
            else:
                chosen = tightest(hits)
                own = [span for spans in hits for span in spans]
                if denied_between(claim.folded, chosen, own) or rejects(claim.folded):
                    continue
                if rivals and not said_of_subject(
                    chosen[1], hits[0], [span for t in rivals for span in claim.spans(t)], own, claim.folded
                ):
                    continue
                return claim.text
        return None

    def claim_with(self, synonym: str, point_terms: list[str]) -> str | None:
        """The first claim-making sentence with a match of the synonym that is not denied there."""
        return next(
            (claim.text for claim in self.claims if claim.contains(synonym) and claim.affirms(synonym, point_terms)),
            None,
        )

    def listed(self, synonym: str, point_terms: list[str]) -> bool:
        """Is the synonym named, and not denied, in a bare list? A denied mention is not a listing either
        way: "学习率，我们已经调低了，不是原因" is too short a clause for a claim, and says the opposite."""
        return any(part.contains(synonym) and part.affirms(synonym, point_terms) for part in self.lists)

    def mentions(self, synonym: str) -> bool:
        return any(part.contains(synonym) for part in [*self.claims, *self.lists])


# An enumeration: at least this many bare terms between commas, and at most one item in five that is more.
ENUM_ITEMS = 4
# ... whose bare items name terms of at least this many rubric points: one point's items ("check the driver,
# the firmware, the CANN version and the torch_npu version") are a statement about that point, not a keyword
# list, and the item that carries the verb is left out of the count.
ENUM_POINTS = 3
ENUM_SPLIT_RE = re.compile(r"[,、]")
# Coordinators join items as a comma does: "the lr and the batch and the eps matter" is the same list.
COORDINATOR_RE = re.compile(r"[,、]|\b(?:and|or|plus)\b|以及|或者")
# Chinese coordinators that are also prepositions ("和其他进程共卡", "与 eager 有差异"): they join items
# only between two of the rubric's terms ("学习率和梯度裁剪").
ZH_COORDINATOR_RE = re.compile(r"[和与及或跟同]")
ENUM_FILLER = frozenset("the a an and or also plus then too as well its their our".split())
ZH_ENUM_FILLER_RE = re.compile(r"以及|还有|或者|和|及|与|或|等")


def enumerated_items(folded: str, terms: list[tuple[int, int]] | None = None, minimum: int = ENUM_ITEMS) -> list[str]:
    """The bare items if this sentence is a list of terms with at most one item in five that is more (the
    one carrying "it is" or a verb), else an empty list. Items are cut at commas, 顿号 and coordinators:
    "the lr and the batch and the eps matter" is the same list as "the lr, the batch, the eps matter".

    An item is bare when it has at most three tokens once articles and "and" are dropped (a Chinese run
    counts a token per two characters, a rubric term in ``terms`` one token, its digits no number) and does
    not start with a verb: "use bf16" and "clip gradients" are instructions; "the isnan", "all ranks",
    "the 16 bytes" and "健康状态" are names. A Chinese clause of seven characters or more ("两棵树各传一半数据")
    is more than a name."""
    terms = sorted(terms or [])
    cuts = sorted(
        [m.span() for m in COORDINATOR_RE.finditer(folded) if not _overlaps(m.span(), terms)]
        + [m.span() for m in ZH_COORDINATOR_RE.finditer(folded) if _between_terms(folded, m.span(), terms)]
    )
    if len(cuts) + 1 < minimum:  # cheap exit for most sentences
        return []
    edges = [0, *(edge for cut in cuts for edge in cut), len(folded)]
    items = [(a, b) for a, b in zip(edges[::2], edges[1::2], strict=True) if folded[a:b].strip()]
    if len(items) < minimum:
        return []
    bare, more, allowed = [], 0, max(1, len(items) // 5)
    for start, end in items:
        item = folded[start:end]
        own = _blank_spans(
            folded, [(max(a, start), min(b, end)) for a, b in terms if a < end and start < b], start, end
        )
        tokens = [t for t in ZH_ENUM_FILLER_RE.sub(" ", own).split() if t not in ENUM_FILLER]
        size = sum(-(-len(CJK_CHAR_RE.findall(t)) // 2) + bool(WORD_RE.search(t) or t == TERM_MARK) for t in tokens)
        leads_with_verb = len(tokens) >= 2 and tokens[0] in VERB_CUES or _leads_with_zh_verb(tokens)
        if size > 3 or leads_with_verb or RELATION_RE.search(own):
            more += 1
            if more > allowed:
                return []
        else:
            bare.append(item)
    return bare if len(bare) >= minimum else []


def _leads_with_zh_verb(tokens: list[str]) -> bool:
    """Does a Chinese item start with a verb or particle of its own ("用 FSDP", "再加激活", "对比 reserved")?
    A term's own verb is already cut to a mark, and a noun that holds a cue ("内存") is no verb."""
    first = tokens[0] if len(tokens) >= 2 else ""
    if not CJK_CHAR_RE.match(first):
        return False
    return bool(ZH_CUES.match(blank_noun_compounds(first)))


def _between_terms(folded: str, span: tuple[int, int], terms: list[tuple[int, int]]) -> bool:
    """Is ``span`` flanked by two terms, with nothing but spaces between?"""
    if _overlaps(span, terms):
        return False
    left = any(b <= span[0] and not folded[b : span[0]].strip() for _a, b in terms)
    return left and any(a >= span[1] and not folded[span[1] : a].strip() for a, _b in terms)


TERM_MARK = "§"
IDENTIFIER_CHAR_RE = re.compile(r"[a-z0-9_./\-]")


def _blank_spans(folded: str, spans: list[tuple[int, int]], start: int = 0, end: int | None = None) -> str:
    """``folded[start:end]`` with each span cut to one ``TERM_MARK``, so that what is left is the text's
    own words."""
    end = len(folded) if end is None else end
    out, last = [], start
    for a, b in sorted(spans):
        # A term inside an identifier blanks the whole identifier: "gradient_accumulation_shard" is one name.
        while a > start and IDENTIFIER_CHAR_RE.match(folded[a - 1]):
            a -= 1
        while b < end and IDENTIFIER_CHAR_RE.match(folded[b]):
            b += 1
        if a < last:  # overlapping terms ("zero", "zero-1") are one name
            last = max(last, b)
            continue
        out.append(f"{folded[last:a]} {TERM_MARK} ")
        last = b
    out.append(folded[last:end])
    return "".join(out)


# Sentences of one template, terms aside, that make an answer a list dressed as prose.
TEMPLATE_REPEATS = 3
# What joins two terms: the enumeration's coordinators, 和/与 among them, and "with" or an article.
TEMPLATE_JOIN_RE = re.compile(
    rf"{TERM_MARK}(?:\s|{COORDINATOR_RE.pattern}|{ZH_COORDINATOR_RE.pattern}|\b(?:with|the|a|an)\b)*(?={TERM_MARK})"
)
# Left out of a template: articles, pronouns and the words that only number sentences ("First, …",
# "Then …", "其次，…"), so "First, X matters. Then Y matters." is one template.
TEMPLATE_NOISE_RE = re.compile(
    rf"\b(?:the|a|an|it|its|them|they|their|this|that|these|those|first|firstly|second|secondly|third|thirdly|"
    rf"fourth|fifth|sixth|next|then|finally|lastly|last|also|additionally|moreover|furthermore|besides|plus)\b|"
    rf"首先|其次|然后|另外|此外|最后|还有|再者|再次|第[一二三四五六七八九十]|[^\w{CJK}{TERM_MARK}]+"
)


def template(sentence: AnswerText) -> str | None:
    """The sentence as a template: its rubric terms and what only joins them cut to one mark, small words
    and punctuation dropped, the rest stemmed. None when the sentence names no term, or is no more than its terms."""
    if not sentence.terms:
        return None
    blanked = TEMPLATE_JOIN_RE.sub("", _blank_spans(sentence.folded, sentence.terms))
    # Stemmed, so "X matters" and "Y and Z matter" are one template.
    words = [stem(word) for word in TEMPLATE_NOISE_RE.sub(" ", blanked).split()]
    return " ".join(words) if any(word != TERM_MARK for word in words) else None


# What a sentence may say of its terms and still say nothing about them: that they matter, in some words.
VACUOUS_WORDS = frozenset(
    """matter matters mattered important importance key relevant relevance crucial critical essential
    significant vital central role roles play plays played factor factors consider considered considering
    worth noting attention aspect aspects notable interesting useful helpful concern concerns involved count
    counts""".split()
)
# Words that carry no claim of their own around such a word: "it is", "they would all be", "we should".
SMALL_WORDS = frozenset(
    """is are was were be been being it they this these there i we you one would should could can may might
    must will do does need needs needed deserve deserves very really definitely certainly surely all both here
    also too big main major core""".split()
)
# Not 影响 or 相关 on their own: "fp16 影响精度" and "A 与 B 相关" relate two terms.
ZH_VACUOUS_RE = re.compile(
    r"很重要|非常重要|十分重要|重要|是关键|关键|需要注意|要注意|值得注意|值得关注|关注|要考虑|考虑|有影响|"
    r"起作用|有作用|作用|因素|方面"
)
ZH_SMALL_RE = re.compile(r"也|都|很|是|的|了|和|与|及|或|我们|我")


def says_nothing(sentence: AnswerText) -> bool:
    """Is the sentence, its rubric terms aside, made only of small words and words that say something
    matters ("is important", "plays a role", "很重要")? Such a sentence names its terms and claims nothing."""
    if not sentence.terms:
        return False
    own = _blank_spans(sentence.folded, sentence.terms)
    own, said = ZH_VACUOUS_RE.subn(" ", own)
    if CJK_CHAR_RE.search(ZH_SMALL_RE.sub(" ", own)):
        return False
    words = [w for w in CLAIM_TOKEN_RE.findall(own) if w not in FUNCTION_WORDS and w not in ENUM_FILLER]
    said += sum(w in VACUOUS_WORDS for w in words)
    return bool(said) and all(w in VACUOUS_WORDS or w in SMALL_WORDS for w in words)


def touched_points(items: list[str], rubric_terms: list[list[str]]) -> int:
    """How many rubric points have a term among these items."""
    texts = [AnswerText(item) for item in items]
    return sum(any(text.contains(term) for text in texts for term in terms) for terms in rubric_terms)


def point_coverage(
    answer: Answer, key: str, weight: int, concepts: list[list[str]], misconceptions: list[dict] | None = None
) -> PointCoverage:
    found, listed, missing, evidence, denied = [], [], [], [], []
    point_terms = [s for synonyms in concepts for s in synonyms]
    for synonyms in concepts:
        hit = next(
            ((s, sentence) for s in synonyms if (sentence := answer.claim_with(s, point_terms)) is not None), None
        )
        if hit is not None:
            found.append(hit[0])
            if hit[1][:300] not in evidence:
                evidence.append(hit[1][:300])
            continue
        bare = next((s for s in synonyms if answer.listed(s, point_terms)), None)
        if bare is not None:
            listed.append(bare)
            continue
        missing.append(synonyms[0])
        # Named, yet neither found nor listed: every mention was denied ("the lr is not the cause"). The
        # feedback says so, or the candidate sees "missed" for a term they wrote.
        said = next((s for s in synonyms if answer.mentions(s)), None)
        if said is not None:
            denied.append(said)
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
        evidence=evidence, contradicted=contradicted, denied=denied,
    )  # fmt: skip


def answer_coverage(text: str, rubric: list[tuple]) -> tuple[list[PointCoverage], int]:
    """Coverage of each rubric point and the weighted percentage over the whole rubric.

    ``rubric``: (key, weight, concepts) or (key, weight, concepts, misconceptions) per point."""
    terms = [[s for synonyms in point[2] for s in synonyms] for point in rubric]
    every_term = [s for point_terms in terms for s in point_terms]
    # The rubric's own Chinese terms are words while it is scored, even those no bank file holds yet.
    with vocabulary(every_term):
        answer = Answer(text, every_term)
        answer.demote_enumerations(terms)
        answer.demote_templates()
        answer.demote_vacuous()
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
        "misconception": contradicted[0] if contradicted else None, "denied": point.get("denied", []),
    }  # fmt: skip

"""Parse and validate question files (docs/question-format.md) without a database.

Kept free of Django imports so authors can check files with
``python -m questions.bankfile FILE...`` before anything is installed.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

BANK_DIR = Path(__file__).resolve().parent / "bank"
# libyaml's loader is several times faster; the pure-Python one gives the same result.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
LANGS = ("en", "zh")
SECTIONS = tuple(f"{kind}:{lang}" for lang in LANGS for kind in ("prompt", "answer"))
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
HEADING_RE = re.compile(r"^## (prompt|answer):(en|zh)\s*$")
LOOKS_LIKE_HEADING_RE = re.compile(r"^##\s*\w+\s*:\s*\w+\s*$")

# Which question numbers each source document holds; a file citing anything
# else is a typo that would make the "all 80 present" check lie.
SOURCE_NUMBERS: dict[str, set[str]] = {
    "000_4baed18c4d18777a.txt": {str(n) for n in range(201, 216)},
    "001_4e8bade384141d4d.txt": {str(n) for n in range(226, 251)},
    "002_e77822a76670f479.txt": {str(n) for n in range(1, 27)},
    "003_a8d101e3d3d7c2b9.txt": {f"Q{n}" for n in range(1, 14)} | {"5.1"},
}


class BankFileError(ValueError):
    """A question file is malformed; the message names file, place and problem."""

    def __init__(self, path: Path | str, where: str, problem: str) -> None:
        self.path = str(path)
        self.where = where
        self.problem = problem
        super().__init__(f"{self.path}: {where}: {problem}")


@dataclass(frozen=True)
class MisconceptionSpec:
    """A wrong claim about a rubric point: every group of ``pattern`` in one sentence, not negated."""

    pattern: list[list[str]]
    explanation: dict[str, str]
    penalty: float = 1.0  # share of the point it takes away

    def as_dict(self) -> dict:
        return {"pattern": self.pattern, "en": self.explanation["en"], "zh": self.explanation["zh"],
                "penalty": self.penalty}  # fmt: skip


@dataclass(frozen=True)
class RubricPointSpec:
    key: str
    weight: int
    text: dict[str, str]
    concepts: list[list[str]]
    misconceptions: list[MisconceptionSpec] = field(default_factory=list)

    def scoring(self) -> tuple:
        """The point as ``questions.concepts.answer_coverage`` takes it, misconceptions included."""
        return (self.key, self.weight, self.concepts, [m.as_dict() for m in self.misconceptions])


@dataclass(frozen=True)
class QuestionSpec:
    path: Path
    slug: str
    topic: str
    difficulty: int
    tags: list[str]
    source_document: str
    source_number: str
    related_questions: list[str]
    title: dict[str, str]
    prompt: dict[str, str]
    answer: dict[str, str]
    rubric: list[RubricPointSpec] = field(default_factory=list)
    # Where the reference answer's claims were checked: [{"title", "section"?, "version"?, "url"?}].
    references: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class TopicSpec:
    slug: str
    name: dict[str, str]
    description: dict[str, str]
    position: int


def load_topics(path: Path = BANK_DIR / "topics.yaml") -> list[TopicSpec]:
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        raise BankFileError(path, _yaml_where(exc), "not valid YAML") from exc
    if not isinstance(raw, list) or not raw:
        raise BankFileError(path, "top level", "expected a non-empty list of topics")
    topics = []
    for i, item in enumerate(raw):
        where = f"topic #{i + 1}"
        if not isinstance(item, dict):
            raise BankFileError(path, where, "expected a mapping")
        slug = _slug(path, f"{where}.slug", item.get("slug"))
        topics.append(
            TopicSpec(
                slug=slug,
                name=_bilingual(path, f"{where}.name", item.get("name")),
                description=_bilingual(path, f"{where}.description", item.get("description")),
                position=i,
            )
        )
    seen = [t.slug for t in topics]
    dupes = sorted({s for s in seen if seen.count(s) > 1})
    if dupes:
        raise BankFileError(path, "slug", f"duplicate topic slugs: {', '.join(dupes)}")
    return topics


def parse_question(path: Path, topic_slugs: set[str] | None = None) -> QuestionSpec:
    """Parse one question file, raising BankFileError on the first problem found."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BankFileError(path, "file", "not UTF-8 text") from exc
    return parse_question_text(text, path, topic_slugs)


def parse_question_text(text: str, path: Path, topic_slugs: set[str] | None = None) -> QuestionSpec:
    """Parse a question file's text as if it lay at ``path`` (which the slug and topic must match):
    how a file written in the browser is checked without touching the disk."""
    meta, body, body_line = _split_front_matter(path, text)
    sections = _split_sections(path, body, body_line)

    slug = _slug(path, "slug", meta.get("slug"))
    if path.stem != slug:
        raise BankFileError(path, "slug", f"file name must be {slug}.md")
    topic = _slug(path, "topic", meta.get("topic"))
    if topic_slugs is not None and topic not in topic_slugs:
        raise BankFileError(path, "topic", f"unknown topic {topic!r}; known: {', '.join(sorted(topic_slugs))}")
    if path.parent.name != topic and path.parent.name != "bank":
        raise BankFileError(path, "topic", f"file lies in folder {path.parent.name!r} but topic is {topic!r}")

    difficulty = meta.get("difficulty")
    if not isinstance(difficulty, int) or isinstance(difficulty, bool) or not 1 <= difficulty <= 5:
        raise BankFileError(path, "difficulty", f"must be an integer 1–5, got {difficulty!r}")

    tags = _slug_list(path, "tags", meta.get("tags"), minimum=1, maximum=8)

    source = meta.get("source")
    if not isinstance(source, dict):
        raise BankFileError(path, "source", "must be a mapping with document and number")
    document = source.get("document")
    if document not in SOURCE_NUMBERS:
        raise BankFileError(path, "source.document", f"unknown source document {document!r}")
    number = source.get("number")
    if isinstance(number, int) and not isinstance(number, bool):
        number = str(number)
    if number not in SOURCE_NUMBERS[document]:
        raise BankFileError(path, "source.number", f"{number!r} is not a question number of {document}")

    rubric_raw = meta.get("rubric")
    if not isinstance(rubric_raw, list) or not 3 <= len(rubric_raw) <= 8:
        raise BankFileError(path, "rubric", "must be a list of 3–8 scoring points")
    rubric = [_rubric_point(path, i, p) for i, p in enumerate(rubric_raw)]
    keys = [p.key for p in rubric]
    if len(set(keys)) != len(keys):
        raise BankFileError(path, "rubric", "point keys must be unique")

    return QuestionSpec(
        path=path,
        slug=slug,
        topic=topic,
        difficulty=difficulty,
        tags=tags,
        source_document=document,
        source_number=number,
        related_questions=_slug_list(
            path, "related_questions", meta.get("related_questions", []), minimum=0, maximum=20
        ),
        title=_bilingual(path, "title", meta.get("title")),
        prompt={lang: sections[f"prompt:{lang}"] for lang in LANGS},
        answer={lang: sections[f"answer:{lang}"] for lang in LANGS},
        rubric=rubric,
        references=_references(path, meta.get("references", [])),
    )


REFERENCE_FIELDS = ("title", "section", "version", "url")


def _references(path: Path, raw: object) -> list[dict[str, str]]:
    """Each reference names a document (``title``) and optionally where in it and which release."""
    items = _list(path, "references", raw)
    if len(items) > 12:
        raise BankFileError(path, "references", f"at most 12 references, got {len(items)}")
    references = []
    for i, item in enumerate(items):
        where = f"references[{i}]"
        if not isinstance(item, dict):
            raise BankFileError(path, where, "must be a mapping with title and optionally section, version, url")
        unknown = sorted(set(item) - set(REFERENCE_FIELDS))
        if unknown:
            raise BankFileError(path, where, f"unknown field {unknown[0]!r}; allowed: {', '.join(REFERENCE_FIELDS)}")
        reference = {}
        for name in REFERENCE_FIELDS:
            value = item.get(name)
            if value is None:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)  # version: 2.5 is written unquoted
            if not isinstance(value, str) or not value.strip() or len(value) > 300:
                raise BankFileError(path, f"{where}.{name}", "must be non-empty text of at most 300 characters")
            reference[name] = value.strip()
        if "title" not in reference:
            raise BankFileError(path, f"{where}.title", "missing: name the document, paper or API reference")
        url = reference.get("url")
        if url is not None and not re.match(r"^https?://\S+$", url):
            raise BankFileError(path, f"{where}.url", f"must be an http(s) address, got {url!r}")
        references.append(reference)
    return references


def iter_question_files(bank_dir: Path = BANK_DIR) -> list[Path]:
    return sorted(p for p in bank_dir.rglob("*.md") if p.is_file())


def _split_front_matter(path: Path, text: str) -> tuple[dict, str, int]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise BankFileError(path, "line 1", "file must start with a '---' front matter line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise BankFileError(path, "front matter", "no closing '---' line") from None
    try:
        meta = yaml.load("\n".join(lines[1:end]), Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        raise BankFileError(path, _yaml_where(exc, offset=1), "front matter is not valid YAML") from exc
    if not isinstance(meta, dict):
        raise BankFileError(path, "front matter", "must be a YAML mapping")
    return meta, "\n".join(lines[end + 1 :]), end + 2


def _split_sections(path: Path, body: str, first_line: int) -> dict[str, str]:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for offset, line in enumerate(body.splitlines()):
        match = HEADING_RE.match(line)
        if match:
            current = f"{match.group(1)}:{match.group(2)}"
            if current in sections:
                raise BankFileError(path, f"line {first_line + offset}", f"section '## {current}' appears twice")
            sections[current] = []
        elif LOOKS_LIKE_HEADING_RE.match(line):
            raise BankFileError(
                path,
                f"line {first_line + offset}",
                f"unknown section heading {line.strip()!r}; expected one of: "
                + ", ".join(f"'## {name}'" for name in SECTIONS),
            )
        elif current is not None:
            sections[current].append(line)
        elif line.strip():
            raise BankFileError(
                path, f"line {first_line + offset}", "text before the first '## prompt:en' style section heading"
            )
    result = {}
    for name in SECTIONS:
        if name not in sections:
            raise BankFileError(path, "body", f"missing section '## {name}'")
        content = "\n".join(sections[name]).strip()
        if not content:
            raise BankFileError(path, f"section {name}", "is empty")
        result[name] = content
    return result


def _rubric_point(path: Path, index: int, raw: object) -> RubricPointSpec:
    where = f"rubric[{index}]"
    if not isinstance(raw, dict):
        raise BankFileError(path, where, "must be a mapping")
    key = _slug(path, f"{where}.key", raw.get("key"))
    weight = raw.get("weight")
    if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 5:
        raise BankFileError(path, f"{where}.weight", f"must be an integer 1–5, got {weight!r}")
    text = _bilingual(path, where, {lang: raw.get(lang) for lang in LANGS})
    concepts = raw.get("concepts")
    if not isinstance(concepts, list) or not 1 <= len(concepts) <= 6:
        raise BankFileError(path, f"{where}.concepts", "must be a list of 1–6 synonym lists")
    groups = []
    for j, group in enumerate(concepts):
        if not isinstance(group, list) or not group:
            raise BankFileError(path, f"{where}.concepts[{j}]", "must be a non-empty list of synonyms")
        terms = [str(t).strip() for t in group if str(t).strip()]
        if len(terms) != len(group):
            raise BankFileError(path, f"{where}.concepts[{j}]", "has an empty synonym")
        groups.append(terms)
    misconceptions = [
        _misconception(path, f"{where}.misconceptions[{j}]", item)
        for j, item in enumerate(_list(path, f"{where}.misconceptions", raw.get("misconceptions", [])))
    ]
    return RubricPointSpec(key=key, weight=weight, text=text, concepts=groups, misconceptions=misconceptions)


def _list(path: Path, where: str, raw: object) -> list:
    if not isinstance(raw, list):
        raise BankFileError(path, where, "must be a list")
    return raw


def _misconception(path: Path, where: str, raw: object) -> MisconceptionSpec:
    if not isinstance(raw, dict):
        raise BankFileError(path, where, "must be a mapping with pattern, en and zh")
    pattern = raw.get("pattern")
    if not isinstance(pattern, list) or not 2 <= len(pattern) <= 5:
        raise BankFileError(path, f"{where}.pattern", "must be 2–5 synonym lists, all met in one sentence")
    groups = []
    for j, group in enumerate(pattern):
        terms = [str(t).strip() for t in group] if isinstance(group, list) else []
        if not terms or not all(terms):
            raise BankFileError(path, f"{where}.pattern[{j}]", "must be a non-empty list of non-empty synonyms")
        marks = {term[0] if term[0] in "!~" else "" for term in terms}
        if len(marks) > 1:
            raise BankFileError(
                path, f"{where}.pattern[{j}]",
                "mixes kinds of terms: a group is all synonyms, all exclusions (!term) or all rivals (~term)",
            )  # fmt: skip
        groups.append(terms)
    plain = [group for group in groups if group[0][0] not in "!~"]
    rival_groups = [group for group in groups if group[0][0] == "~"]
    if not plain:
        raise BankFileError(path, f"{where}.pattern", "needs at least one group of synonyms besides !/~ groups")
    if rival_groups and (len(rival_groups) > 1 or len(plain) < 2):
        raise BankFileError(
            path, f"{where}.pattern",
            "rivals (~term) take one group, and two groups of synonyms: the second is said of the first, not a rival",
        )  # fmt: skip
    penalty = raw.get("penalty", 1.0)
    if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not 0 < penalty <= 1:
        raise BankFileError(path, f"{where}.penalty", f"must be a number in (0, 1], got {penalty!r}")
    explanation = _bilingual(path, where, {lang: raw.get(lang) for lang in LANGS})
    return MisconceptionSpec(pattern=groups, explanation=explanation, penalty=float(penalty))


def _bilingual(path: Path, where: str, raw: object) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise BankFileError(path, where, "must have en and zh texts")
    out = {}
    for lang in LANGS:
        value = raw.get(lang)
        if not isinstance(value, str) or not value.strip():
            raise BankFileError(path, f"{where}.{lang}", "is missing or empty")
        out[lang] = value.strip()
    return out


def _slug(path: Path, where: str, value: object) -> str:
    if not isinstance(value, str) or not SLUG_RE.match(value):
        raise BankFileError(path, where, f"must be lowercase letters, digits and hyphens, got {value!r}")
    return value


def _slug_list(path: Path, where: str, value: object, minimum: int, maximum: int) -> list[str]:
    if value is None:
        value = []
    if not isinstance(value, list) or not minimum <= len(value) <= maximum:
        raise BankFileError(path, where, f"must be a list of {minimum}–{maximum} slugs")
    return [_slug(path, f"{where}[{i}]", v) for i, v in enumerate(value)]


def _yaml_where(exc: yaml.YAMLError, offset: int = 0) -> str:
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return "YAML"
    return f"line {mark.line + 1 + offset}, column {mark.column + 1}"


def main(argv: list[str]) -> int:
    topic_slugs = {t.slug for t in load_topics()}
    paths = [Path(a) for a in argv] or iter_question_files()
    failures = 0
    for path in paths:
        try:
            parse_question(path, topic_slugs)
        except BankFileError as exc:
            failures += 1
            print(f"ERROR {exc}")
    print(f"{len(paths) - failures} ok, {failures} with errors")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The question editor's form: posted fields → the fields of ``question_editing``, and back for the page.

Inputs are named as the bank's parser names places (``title.en``, ``rubric[2].concepts``,
``rubric[0].misconceptions[1].pattern``), so a parser message lands next to the input it names.
A concept is one line of synonyms separated by ``|`` (synonyms may hold commas: "(out, in)").
"""

from __future__ import annotations

import re

from django import forms
from django.utils.translation import gettext_lazy as _

from questions.bankfile import LANGS, REFERENCE_FIELDS, SOURCE_NUMBERS
from questions.models import Topic

SYNONYM_SEPARATOR = "|"
RUBRIC_NAME_RE = re.compile(r"^rubric\[(\d+)\]\.")
MISCONCEPTION_NAME_RE = re.compile(r"^rubric\[(\d+)\]\.misconceptions\[(\d+)\]\.")


def split_words(text: str) -> list[str]:
    """Tags and slugs: separated by commas or spaces."""
    return [word for word in re.split(r"[,\s]+", text or "") if word]


def groups_from_lines(text: str) -> list[list[str]]:
    """One concept (or pattern group) per non-empty line; synonyms separated by ``|``."""
    groups = []
    for line in (text or "").splitlines():
        synonyms = [s.strip() for s in line.split(SYNONYM_SEPARATOR) if s.strip()]
        if synonyms:
            groups.append(synonyms)
    return groups


def lines_from_groups(groups: list[list[str]]) -> str:
    return "\n".join(f" {SYNONYM_SEPARATOR} ".join(str(s) for s in group) for group in groups)


def references_from_lines(text: str) -> list[dict[str, str]]:
    """One reference per non-empty line: ``title | section | version | url``, empty parts left out
    (``title | | | url``). Parts past the fourth stay with the url, so the parser names the line."""
    references = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split(SYNONYM_SEPARATOR)]
        if len(parts) > len(REFERENCE_FIELDS):
            parts[len(REFERENCE_FIELDS) - 1 :] = [f" {SYNONYM_SEPARATOR} ".join(parts[len(REFERENCE_FIELDS) - 1 :])]
        references.append({name: part for name, part in zip(REFERENCE_FIELDS, parts, strict=False) if part})
    return references


def lines_from_references(references: list[dict]) -> str:
    lines = []
    for reference in references:
        parts = [str(reference.get(name, "")) for name in REFERENCE_FIELDS]
        while parts and not parts[-1]:
            parts.pop()
        lines.append(f" {SYNONYM_SEPARATOR} ".join(parts))
    return "\n".join(lines)


def _indices(data, pattern: re.Pattern, *prefix: int) -> list[int]:
    found = set()
    for name in data:
        match = pattern.match(name)
        if match and tuple(int(g) for g in match.groups()[: len(prefix)]) == prefix:
            found.add(int(match.groups()[len(prefix)]))
    return sorted(found)


def _blank(values: dict) -> bool:
    return not any(str(v).strip() for v in values.values())


def fields_from_data(data) -> dict:
    """The editor's posted form (a QueryDict or a plain dict) as fields. Trailing blank rubric points and
    misconceptions (the spare ones the page offers) are dropped; the parser judges everything else."""
    # Browsers send a textarea's line breaks as CRLF; the bank's files use LF.
    get = lambda name: str(data.get(name, "") or "").replace("\r\n", "\n")  # noqa: E731
    rubric = []
    for i in _indices(data, RUBRIC_NAME_RE):
        base = f"rubric[{i}]"
        misconceptions = []
        for j in _indices(data, MISCONCEPTION_NAME_RE, i):
            m = f"{base}.misconceptions[{j}]"
            raw = {name: get(f"{m}.{name}") for name in ("pattern", "en", "zh", "penalty")}
            misconceptions.append(
                {"pattern": groups_from_lines(raw["pattern"]), "en": raw["en"].strip(), "zh": raw["zh"].strip(),
                 "penalty": raw["penalty"].strip() or 1.0, "_blank": _blank(raw)}
            )  # fmt: skip
        raw = {name: get(f"{base}.{name}") for name in ("key", "weight", "en", "zh", "concepts")}
        rubric.append(
            {"key": raw["key"].strip(), "weight": raw["weight"].strip(), "en": raw["en"].strip(),
             "zh": raw["zh"].strip(), "concepts": groups_from_lines(raw["concepts"]),
             "misconceptions": _drop_trailing_blank(misconceptions), "_blank": _blank(raw) and not misconceptions}
        )  # fmt: skip
    return {
        "slug": get("slug").strip(),
        "topic": get("topic").strip(),
        "difficulty": get("difficulty").strip(),
        "tags": split_words(get("tags")),
        "source_document": get("source.document").strip(),
        "source_number": get("source.number").strip(),
        "related_questions": split_words(get("related_questions")),
        "references": references_from_lines(get("references")),
        **{name: {lang: get(f"{name}.{lang}") for lang in LANGS} for name in ("title", "prompt", "answer")},
        "rubric": _drop_trailing_blank(rubric),
    }


def _drop_trailing_blank(items: list[dict]) -> list[dict]:
    while items and items[-1]["_blank"]:
        items.pop()
    return [{k: v for k, v in item.items() if k != "_blank"} for item in items]


def samples_from_data(data) -> list[str]:
    getlist = getattr(data, "getlist", None)
    values = getlist("sample") if getlist else data.get("sample", [])
    return [str(v) for v in (values if isinstance(values, list) else [values])]


def _input(name: str, value: object, errors: dict[str, str]) -> dict:
    return {"name": name, "value": "" if value is None else value, "error": errors.get(name, "")}


def editor_form(fields: dict, errors: dict[str, str] | None = None, spare_point: bool = True) -> dict:
    """The fields as the page renders them: every input with its name, value and the parser's message."""
    errors = errors or {}
    points = []
    rubric = list(fields.get("rubric", []))
    if spare_point:  # without JavaScript, a blank point is how a point is added
        rubric.append({"key": "", "weight": "", "en": "", "zh": "", "concepts": [], "misconceptions": []})
    for i, point in enumerate(rubric):
        base = f"rubric[{i}]"
        misconceptions = [
            {
                "index": j,
                "error": errors.get(f"{base}.misconceptions[{j}]", ""),
                "pattern": _input(
                    f"{base}.misconceptions[{j}].pattern", lines_from_groups(m.get("pattern", [])), errors
                ),
                "en": _input(f"{base}.misconceptions[{j}].en", m.get("en", ""), errors),
                "zh": _input(f"{base}.misconceptions[{j}].zh", m.get("zh", ""), errors),
                "penalty": _input(f"{base}.misconceptions[{j}].penalty", m.get("penalty", 1.0), errors),
            }
            for j, m in enumerate(point.get("misconceptions", []))
        ]
        points.append(
            {
                "index": i,
                "number": i + 1,
                "error": errors.get(base, ""),
                "key": _input(f"{base}.key", point.get("key", ""), errors),
                "weight": _input(f"{base}.weight", point.get("weight", ""), errors),
                "en": _input(f"{base}.en", point.get("en", ""), errors),
                "zh": _input(f"{base}.zh", point.get("zh", ""), errors),
                "concepts": _input(f"{base}.concepts", lines_from_groups(point.get("concepts", [])), errors),
                "misconceptions": misconceptions,
                "misconceptions_error": errors.get(f"{base}.misconceptions", ""),
                "spare": spare_point and i == len(rubric) - 1,
            }
        )
    form = {
        "slug": _input("slug", fields.get("slug", ""), errors),
        "topic": _input("topic", fields.get("topic", ""), errors),
        "difficulty": _input("difficulty", fields.get("difficulty", ""), errors),
        "tags": _input("tags", ", ".join(fields.get("tags", [])), errors),
        "source_document": _input("source.document", fields.get("source_document", ""), errors),
        "source_number": _input("source.number", fields.get("source_number", ""), errors),
        "related_questions": _input("related_questions", ", ".join(fields.get("related_questions", [])), errors),
        "references": _input("references", lines_from_references(fields.get("references", [])), errors),
        "rubric": points,
        "rubric_error": errors.get("rubric", ""),
    }
    for name in ("title", "prompt", "answer"):
        for lang in LANGS:
            form[f"{name}_{lang}"] = _input(f"{name}.{lang}", fields.get(name, {}).get(lang, ""), errors)
    # A message whose place has no input of its own is shown above the form, never dropped.
    placed = _names(form) | {"rubric"}
    for point in points:
        base = f"rubric[{point['index']}]"
        placed |= {base, f"{base}.misconceptions"} | {
            f"{base}.misconceptions[{m['index']}]" for m in point["misconceptions"]
        }
    form["general_errors"] = [message for name, message in errors.items() if name not in placed]
    return form


def _names(value: object) -> set[str]:
    if isinstance(value, dict):
        own = {value["name"]} if isinstance(value.get("name"), str) and "value" in value else set()
        return own.union(*(_names(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_names(v) for v in value))
    return set()


def topic_choices() -> list[tuple[str, str]]:
    return [(topic.slug, f"{topic.name} ({topic.slug})") for topic in Topic.objects.all()]


def source_documents() -> list[str]:
    return sorted(SOURCE_NUMBERS)


class QuestionFilterForm(forms.Form):
    q = forms.CharField(label=_("Search"), required=False, max_length=200)
    topic = forms.ChoiceField(label=_("Topic"), required=False)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["topic"].choices = [("", _("All topics")), *topic_choices()]


class ImportForm(forms.Form):
    file = forms.FileField(label=_("Question file (.md)"))


def as_post_data(fields: dict) -> dict[str, str]:
    """The fields as the editor page posts them (input name → text): what the page's inputs hold."""
    form = editor_form(fields, spare_point=False)
    data: dict[str, str] = {}

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("name"), str) and "value" in value:
                data[value["name"]] = str(value["value"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(form)
    return data

"""Ranked search over the SearchTerm index, combined with the bank's filters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet, Sum

from questions.models import Question, SearchTerm
from questions.textsearch import CJK_RUN_RE, TermGroup, parse_query


@dataclass
class SearchResult:
    ids: Sequence[int]
    groups: list[TermGroup]


def search_ids(query: str, within: QuerySet[Question] | None = None) -> SearchResult:
    """Ids of active questions matching every word of ``query``, best first.

    ``within`` narrows the search to a filtered queryset; leave it out when no
    filter applies, which spares the database a join with the question table.
    """
    questions = within if within is not None else Question.objects.active()
    groups = parse_query(query)
    indexed = [g for g in groups if not _single_cjk_char(g)]
    if single := [g for g in groups if _single_cjk_char(g)]:
        # One Chinese character has no bigram; fall back to a substring scan for it.
        for group in single:
            questions = questions.filter(Q(title_zh__contains=group.source) | Q(prompt_zh__contains=group.source))
    if not indexed:
        return SearchResult(list(questions.values_list("id", flat=True)) if single else [], groups)
    counts = {f"g{i}": Count("term", filter=Q(term__in=g.terms)) for i, g in enumerate(indexed)}
    hits = SearchTerm.objects.filter(term__in={t for g in indexed for t in g.terms})
    if within is not None or single:
        hits = hits.filter(question__in=questions.values("id"))
    rows = (
        hits.values("question")
        .annotate(score=Sum("weight"), **counts)
        .filter(**{f"g{i}__gte": g.needed for i, g in enumerate(indexed)})
        .order_by("-score", "question")
        .values_list("question", flat=True)
    )
    return SearchResult(list(rows), groups)


def _single_cjk_char(group: TermGroup) -> bool:
    return len(group.source) == 1 and bool(CJK_RUN_RE.fullmatch(group.source))

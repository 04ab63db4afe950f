"""Practice-mode rules: who may see reference answers, submitting and self-scoring answers, progress."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _

from core.roles import Role, has_role
from questions.concepts import answer_coverage
from questions.models import PracticeAnswer, Question, Reveal, Topic
from questions.rendering import render_markdown

SELF_SCORE_LEVELS = {0, 1, 2}  # missed, partly, fully
STRONG_AT = 70  # self-score percent at or above which a question counts as strong
WEAK_BELOW = 50


def can_see_answer(user, question: Question) -> bool:
    """Interviewers and authors always may; a candidate after answering or choosing to reveal."""
    if not user.is_authenticated:
        return False
    if has_role(user, Role.INTERVIEWER, Role.AUTHOR):
        return True
    return Reveal.objects.filter(user=user, question=question).exists()


def reveal_answer(user, question: Question) -> Reveal:
    reveal, _created = Reveal.objects.get_or_create(user=user, question=question, defaults={"via": Reveal.Via.REVEAL})
    return reveal


def rubric_tuples(question: Question) -> list[tuple]:
    return [(p.key, p.weight, p.concepts, p.misconceptions) for p in question.rubric.all()]


@transaction.atomic
def submit_practice_answer(user, question: Question, text: str, for_interview: bool = False) -> PracticeAnswer:
    text = (text or "").strip()
    if not text:
        raise ValidationError({"text": _("Write an answer before submitting.")})
    if len(text) > PracticeAnswer.MAX_LENGTH:
        raise ValidationError(
            {
                "text": _("Answers are limited to %(limit)s characters; yours has %(count)s.")
                % {"limit": PracticeAnswer.MAX_LENGTH, "count": len(text)}
            }
        )
    points, percent = answer_coverage(text, rubric_tuples(question))
    answer = PracticeAnswer.objects.create(
        user=user,
        question=question,
        text=text,
        text_html=render_markdown(text),
        coverage=[p.as_dict() for p in points],
        coverage_percent=percent,
        for_interview=for_interview,
    )
    if not for_interview:
        Reveal.objects.get_or_create(user=user, question=question, defaults={"via": Reveal.Via.ANSWER})
    return answer


def self_score(answer: PracticeAnswer, scores: dict[str, int]) -> PracticeAnswer:
    weights = {p.key: p.weight for p in answer.question.rubric.all()}
    if not isinstance(scores, dict) or set(scores) != set(weights):
        missing = sorted(set(weights) - set(scores or {}))
        unknown = sorted(set(scores or {}) - set(weights))
        raise ValidationError(
            {
                "scores": _("Score every rubric point once. Missing: %(missing)s; unknown: %(unknown)s.")
                % {"missing": ", ".join(missing) or "-", "unknown": ", ".join(unknown) or "-"}
            }
        )
    bad = [key for key, value in scores.items() if value not in SELF_SCORE_LEVELS or isinstance(value, bool)]
    if bad:
        raise ValidationError({"scores": _("Scores must be 0, 1 or 2 (points: %(keys)s).") % {"keys": ", ".join(bad)}})
    total = sum(weights.values())
    answer.self_scores = scores
    answer.self_score_percent = round(100 * sum(weights[k] * v / 2 for k, v in scores.items()) / total)
    answer.self_scored_at = timezone.now()
    answer.save(update_fields=["self_scores", "self_score_percent", "self_scored_at"])
    return answer


@dataclass
class TopicProgress:
    topic: Topic
    total: int
    answered: int = 0
    strong: int = 0
    weak: int = 0

    @property
    def unscored_or_middle(self) -> int:
        return self.answered - self.strong - self.weak


def progress_by_topic(user) -> list[TopicProgress]:
    """Per topic: questions answered, and how many are strong/weak by the latest self-score."""
    topics = list(Topic.objects.all())
    rows = {t.id: TopicProgress(topic=t, total=0) for t in topics}
    for topic_id, count in active_question_counts().items():
        if topic_id in rows:
            rows[topic_id].total = count
    latest_score: dict[int, int | None] = {}
    answered_topic: dict[int, int] = {}
    answers = (
        PracticeAnswer.objects.filter(user=user, question__retired=False, for_interview=False)
        .order_by("question_id", "-created_at", "-id")
        .values_list("question_id", "question__topic_id", "self_score_percent")
    )
    for question_id, topic_id, score in answers:
        answered_topic.setdefault(question_id, topic_id)
        # The newest self-scored attempt decides; an unscored newer attempt does not erase it.
        if latest_score.get(question_id) is None:
            latest_score[question_id] = score
    for question_id, topic_id in answered_topic.items():
        row = rows[topic_id]
        row.answered += 1
        score = latest_score.get(question_id)
        if score is not None and score >= STRONG_AT:
            row.strong += 1
        elif score is not None and score < WEAK_BELOW:
            row.weak += 1
    return [rows[t.id] for t in topics]


TOPIC_COUNTS_CACHE_KEY = "questions:topic-counts"


def active_question_counts() -> dict[int, int]:
    """Active questions per topic id. Counting 20k rows on every page view is waste: cached
    for a minute, and dropped by loadbank when the bank changes."""
    counts = cache.get(TOPIC_COUNTS_CACHE_KEY)
    if counts is None:
        rows = Question.objects.active().values("topic_id").annotate(n=Count("id"))
        counts = {row["topic_id"]: row["n"] for row in rows}
        cache.set(TOPIC_COUNTS_CACHE_KEY, counts, timeout=60)
    return counts

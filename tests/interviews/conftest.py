"""Interviews made the way an interviewer makes them: through the services, on the loaded bank and labs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from interviews.loops import ItemSpec
from interviews.scheduling import CandidateSpec, create_interview
from questions.models import Question
from tests.conftest import make_user
from tests.labs.helpers import EXAMPLE, publish

QUESTION_SLUG_FIELD = "slug"


@pytest.fixture
def question(db) -> Question:
    return Question.objects.filter(retired=False, rubric__isnull=False).distinct().order_by("slug").first()


@pytest.fixture
def co_interviewer(db):
    from core.roles import Role

    return make_user("intv2", Role.INTERVIEWER)


@pytest.fixture
def make_interview(db, interviewer, candidate, question):
    """An interview with one question and the NaN lab, open now, for ``candidate`` (or by e-mail)."""

    def _make(owner=None, *, by_email: bool = False, minutes: int = 45, time_box: int | None = None, panel=()):
        publish(EXAMPLE)
        now = timezone.now()
        who = CandidateSpec(name="Ada Lovelace", email="ada@example.test") if by_email else CandidateSpec(candidate)
        return create_interview(
            owner or interviewer, title="Training infra loop", candidate=who,
            items=[ItemSpec("question", question.slug, time_box), ItemSpec("lab", EXAMPLE)],
            window_opens_at=now - timedelta(minutes=1), window_closes_at=now + timedelta(hours=2),
            duration_minutes=minutes, co_interviewers=panel,
        )  # fmt: skip

    return _make

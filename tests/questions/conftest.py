import pytest
from django.core.management import call_command

from questions.models import Question, Tag, Topic


@pytest.fixture
def bank(db):
    """The real question bank. Loaded once per session; transactional tests flush it, so reload then."""
    if not Question.objects.exists():
        call_command("loadbank", verbosity=0)


@pytest.fixture
def empty_bank(db):
    """Start from no questions at all (rolled back after the test)."""
    Question.objects.all().delete()
    Topic.objects.all().delete()
    Tag.objects.all().delete()

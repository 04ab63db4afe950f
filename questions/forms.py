from __future__ import annotations

from django import forms
from django.core.validators import validate_slug
from django.utils.translation import gettext_lazy as _

from questions.models import PracticeAnswer, Question, Topic
from questions.search import SearchResult, search_ids
from questions.services import SELF_SCORE_LEVELS

DIFFICULTY_CHOICES = [("", _("Any difficulty"))] + [(str(i), str(i)) for i in range(1, 6)]
HAS_LAB_CHOICES = [("", _("With or without a lab")), ("yes", _("Has a lab")), ("no", _("No lab yet"))]


class BankFilterForm(forms.Form):
    q = forms.CharField(label=_("Search"), max_length=200, required=False)
    topic = forms.ChoiceField(label=_("Topic"), required=False)
    difficulty = forms.TypedChoiceField(
        label=_("Difficulty"), choices=DIFFICULTY_CHOICES, coerce=int, empty_value=None, required=False
    )
    tag = forms.CharField(label=_("Tag"), max_length=50, required=False, validators=[validate_slug])
    has_lab = forms.ChoiceField(label=_("Lab"), choices=HAS_LAB_CHOICES, required=False)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.topics = list(Topic.objects.all())  # the page's topic chips reuse this list
        self.fields["topic"].choices = [("", _("All topics"))] + [(t.slug, t.name) for t in self.topics]

    def is_filtering(self) -> bool:
        data = getattr(self, "cleaned_data", {})
        return any(data.get(name) for name in ("topic", "difficulty", "tag", "has_lab"))

    def matching(self) -> SearchResult:
        """Ids of the active questions these (valid) filters and search words select, in listing order.
        Without search words the ids stay a lazy queryset, so a paginator pages them in SQL."""
        questions = self.apply(Question.objects.active())
        query = (self.cleaned_data.get("q") or "").strip()
        if query:
            return search_ids(query, within=questions if self.is_filtering() else None)
        return SearchResult(questions.values_list("id", flat=True), [])

    def apply(self, questions):
        data = self.cleaned_data
        if data.get("topic"):
            questions = questions.filter(topic__slug=data["topic"])
        if data.get("difficulty"):
            questions = questions.filter(difficulty=data["difficulty"])
        if data.get("tag"):
            questions = questions.filter(tags__slug=data["tag"])
        if data.get("has_lab") == "yes":
            questions = questions.filter(has_lab=True)
        elif data.get("has_lab") == "no":
            questions = questions.filter(has_lab=False)
        return questions


class PracticeForm(forms.Form):
    text = forms.CharField(
        label=_("Your answer"),
        max_length=PracticeAnswer.MAX_LENGTH,
        widget=forms.Textarea(
            attrs={"rows": 12, "placeholder": _("Answer as you would in an interview. Markdown works.")}
        ),
        help_text=_("Write in English or Chinese. The reference answer and rubric appear after you submit."),
    )


class SelfScoreForm(forms.Form):
    LEVELS = [(2, _("Fully")), (1, _("Partly")), (0, _("Missed"))]

    def __init__(self, question: Question, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        assert {value for value, _label in self.LEVELS} == SELF_SCORE_LEVELS
        for point in question.rubric.all():
            self.fields[point.key] = forms.TypedChoiceField(
                label=point.text, choices=self.LEVELS, coerce=int, widget=forms.RadioSelect
            )

"""Forms of the interviewer's pages: a template (loop) and a new interview.

Items are rows of parallel inputs (``item_ref`` = "question:<slug>" or "lab:<slug>", ``item_box`` =
minutes or empty) that the page's script adds, removes and reorders; blank rows are ignored, so the
form also works without the script.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils.translation import get_language, gettext
from django.utils.translation import gettext_lazy as _

from core.contentlang import content_language
from core.roles import Role, has_role
from interviews.loops import MAX_DURATION_MINUTES, ItemSpec
from labs.presenters import pick
from labs.services import published_labs
from questions.models import Question

DATETIME_LOCAL = "%Y-%m-%dT%H:%M"
BLANK_ROWS = 2


def item_choices(language: str | None = None) -> list[tuple[str, list[tuple[str, str]]]]:
    """The select's option groups: published labs, then active bank questions, titled in the page language."""
    language = language or get_language()
    labs = [(f"lab:{lab.slug}", pick(lab.current.spec["title"], language)) for lab in published_labs().order_by("slug")]
    questions = [
        (f"question:{q.slug}", q.localized("title", content_language(language)))
        for q in Question.objects.active().order_by("topic__position", "difficulty", "slug")
    ]
    return [(gettext("Labs"), labs), (gettext("Questions"), questions)]


def parse_items(data) -> tuple[list[ItemSpec], list[dict], list[str]]:
    """(specs, rows to re-render, errors) from the posted item rows."""
    refs = data.getlist("item_ref")
    boxes = data.getlist("item_box")
    specs, rows, errors = [], [], []
    for n, ref in enumerate(refs):
        box_raw = (boxes[n] if n < len(boxes) else "").strip()
        ref = (ref or "").strip()
        if not ref:
            continue
        rows.append({"ref": ref, "box": box_raw})
        kind, _sep, slug = ref.partition(":")
        box = None
        if box_raw:
            try:
                box = int(box_raw)
            except ValueError:
                errors.append(
                    gettext("item %(n)d: the time box is a whole number of minutes, not “%(value)s”")
                    % {"n": len(rows), "value": box_raw}
                )
                continue
        specs.append(ItemSpec(kind, slug, box))
    return specs, rows, errors


def item_rows(specs: list[ItemSpec]) -> list[dict]:
    return [{"ref": f"{s.kind}:{s.ref}", "box": "" if s.time_box_minutes is None else str(s.time_box_minutes)}
            for s in specs]  # fmt: skip


class TemplateForm(forms.Form):
    title = forms.CharField(label=_("Title"), max_length=200)
    instructions = forms.CharField(
        label=_("Instructions for the candidate"), required=False, widget=forms.Textarea(attrs={"rows": 4})
    )
    duration_minutes = forms.IntegerField(
        label=_("Total duration (minutes)"), min_value=5, max_value=MAX_DURATION_MINUTES, initial=60
    )


class UTCDateTimeField(forms.DateTimeField):
    """A ``datetime-local`` input read as UTC, whatever the server's or browser's zone."""

    widget = forms.DateTimeInput(attrs={"type": "datetime-local"}, format=DATETIME_LOCAL)

    def __init__(self, **kwargs) -> None:
        super().__init__(input_formats=[DATETIME_LOCAL, "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"], **kwargs)

    def to_python(self, value):
        if isinstance(value, str):
            value = value.strip()
            for fmt in self.input_formats:
                try:
                    return datetime.strptime(value, fmt).replace(tzinfo=UTC)
                except ValueError:
                    continue
        return super().to_python(value)


class InterviewForm(TemplateForm):
    candidate_account = forms.CharField(
        label=_("Existing account (username or e-mail)"), required=False, max_length=254,
        help_text=_("Leave empty to invite someone without an account by name and e-mail."),
    )  # fmt: skip
    candidate_name = forms.CharField(label=_("Candidate's name"), required=False, max_length=150)
    candidate_email = forms.EmailField(label=_("Candidate's e-mail"), required=False)
    window_opens_at = UTCDateTimeField(label=_("Start window opens (UTC)"))
    window_closes_at = UTCDateTimeField(label=_("Start window closes (UTC)"))
    co_interviewers = forms.CharField(
        label=_("Co-interviewers"), required=False, max_length=1000,
        help_text=_("Usernames of other interviewers, separated by commas or spaces."),
    )  # fmt: skip

    def clean_candidate_account(self):
        raw = self.cleaned_data["candidate_account"].strip()
        if not raw:
            return None
        users = get_user_model().objects.filter(Q(username__iexact=raw) | Q(email__iexact=raw))
        if users.count() != 1:
            raise forms.ValidationError(
                gettext("No single account has the username or e-mail “%(value)s”.") % {"value": raw}
            )
        return users.get()

    def clean_co_interviewers(self):
        names = [n for n in self.cleaned_data["co_interviewers"].replace(",", " ").split() if n]
        users, unknown = [], []
        for name in dict.fromkeys(names):
            user = get_user_model().objects.filter(username__iexact=name).first()
            if user is None or not has_role(user, Role.INTERVIEWER):
                unknown.append(name)
            else:
                users.append(user)
        if unknown:
            raise forms.ValidationError(gettext("Not interviewers here: %(names)s.") % {"names": ", ".join(unknown)})
        return users

    def clean(self):
        data = super().clean()
        if data.get("candidate_account") is None and not self.errors.get("candidate_account"):
            if not data.get("candidate_name", "").strip() or not data.get("candidate_email"):
                self.add_error(
                    "candidate_account",
                    gettext("Pick an existing account, or give the candidate's name and e-mail for an invitation."),
                )
        return data

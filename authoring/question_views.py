"""Author pages for questions: the list, the editor (new and existing), import and export.

Thin: the work is in ``authoring.question_editing``; the live check is ``authoring.question_api``.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from authoring import question_editing as editing
from authoring.question_forms import (
    ImportForm,
    QuestionFilterForm,
    editor_form,
    fields_from_data,
    samples_from_data,
    source_documents,
    topic_choices,
)
from core.roles import Role, role_required
from questions.bankfile import BankFileError
from questions.calibration import calibrate_draft
from questions.models import Question, current_lang

PAGE_SIZE = 50


@role_required(Role.AUTHOR)
def question_list(request: HttpRequest) -> HttpResponse:
    form = QuestionFilterForm(request.GET or None)
    query, topic = "", ""
    if form.is_bound and form.is_valid():
        query, topic = form.cleaned_data["q"].strip(), form.cleaned_data["topic"]
    page = Paginator(editing.question_rows(query, topic), PAGE_SIZE).get_page(request.GET.get("page"))
    query_string = request.GET.copy()
    query_string.pop("page", None)
    return render(
        request,
        "authoring/questions/list.html",
        {"form": form, "page": page, "query_string": query_string.urlencode(), "import_form": ImportForm()},
    )


@role_required(Role.AUTHOR)
@require_http_methods(["GET", "POST"])
def question_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        fields, samples = fields_from_data(request.POST), samples_from_data(request.POST)
        try:
            version = editing.save_fields(request.user, fields, editing=None, base="", samples=samples)
        except editing.QuestionRefused as exc:
            return _editor(request, None, fields, exc.errors, samples, status=400)
        messages.success(
            request, _("Question %(slug)s created: candidates can practise it now.") % {"slug": version.slug}
        )
        return redirect("authoring:question-edit", version.slug)
    fields, samples = editing.empty_fields(), []
    copy_of = request.GET.get("from")
    if copy_of:
        source = get_object_or_404(Question, slug=copy_of)
        fields, samples = _fields_of(source), editing.saved_samples(source.slug)
        fields["slug"] = ""
    return _editor(request, None, fields, {}, samples)


@role_required(Role.AUTHOR)
@require_http_methods(["GET", "POST"])
def question_edit(request: HttpRequest, slug: str) -> HttpResponse:
    question = get_object_or_404(Question.objects.select_related("topic"), slug=slug)
    if request.method == "POST":
        fields, samples, base = (
            fields_from_data(request.POST),
            samples_from_data(request.POST),
            request.POST.get("base", ""),
        )
        try:
            version = editing.save_fields(request.user, fields, editing=slug, base=base, samples=samples)
        except editing.QuestionRefused as exc:
            return _editor(request, question, fields, exc.errors, samples, status=400, base=base)
        messages.success(request, _("Saved version %(number)s: candidates see it now.") % {"number": version.number})
        return redirect("authoring:question-edit", slug)
    return _editor(request, question, _fields_of(question), {}, editing.saved_samples(question.slug))


def _fields_of(question: Question) -> dict:
    text, _origin = editing.current_text(question)
    try:
        return editing.spec_to_fields(
            editing.parse_text(text, editing.file_path_for(question.slug, question.topic.slug))
        )
    except BankFileError:
        return editing.question_to_fields(question)


def _editor(
    request: HttpRequest,
    question: Question | None,
    fields: dict,
    errors: dict,
    samples: list[str],
    status: int = 200,
    base: str | None = None,
) -> HttpResponse:
    samples = [sample for sample in samples if sample.strip()]
    check = editing.check_fields(fields)
    lang = current_lang()
    form = editor_form(fields, errors)
    previews = editing.previews(fields)
    labels = {
        "prompt.en": _("Prompt (English)"),
        "answer.en": _("Reference answer (English)"),
        "prompt.zh": _("Prompt (Chinese)"),
        "answer.zh": _("Reference answer (Chinese)"),
    }
    context = {
        "question": question,
        "form": form,
        "sections": [
            {"f": form[name.replace(".", "_")], "label": label, "preview": previews[name]}
            for name, label in labels.items()
        ],
        "blank_point": {**editor_form({"rubric": []})["rubric"][0], "spare": False},
        "blank_misconception": editor_form({"rubric": [{"misconceptions": [{}]}]}, spare_point=False)["rubric"][0][
            "misconceptions"
        ][0],
        "ui": {
            "checking": _("Checking…"),
            "parses": _("The file parses as loadbank reads it."),
            "fails": _("The file does not parse yet: see the messages next to the fields."),
            "unreachable": _("The check could not reach the server; it will try again as you type."),
            "sample": _("Sample answer {number}"),
            "unsaved": _("You have unsaved changes."),
            "max_samples": editing.MAX_SAMPLES,
        },
        "topics": topic_choices(),
        "documents": source_documents(),
        "base": editing.state_token(question) if base is None else base,
        "check_errors": check.errors,
        "warnings": check.warnings,
        "file_name": str(check.path),
        "results": editing.rubric_check(fields, check.spec, samples, lang),
        "calibration": calibrate_draft(check.spec) if check.spec else None,
        # One blank box past the saved answers (up to the limit), for the next one.
        "samples": [*samples, ""][: max(len(samples), editing.MAX_SAMPLES)],
        "max_samples": editing.MAX_SAMPLES,
        "check_url": reverse("authoring:api-question-check"),
        "import_form": ImportForm(),
    }
    if question is not None:
        latest = editing.latest_version(question.slug)
        context.update(
            shows_version=latest if editing.shows_latest_version(question, latest) else None,
            history=editing.history(question.slug),
            events=editing.events(question.slug),
        )
    return render(request, "authoring/questions/edit.html", context, status=status)


@role_required(Role.AUTHOR)
def question_export(request: HttpRequest, slug: str) -> HttpResponse:
    question = get_object_or_404(Question.objects.select_related("topic"), slug=slug)
    number = request.GET.get("version")
    try:
        name, text = editing.export_file(request.user, question, int(number) if number else None)
    except (ValueError, editing.QuestionRefused):
        messages.error(request, _("There is no version %(number)s of this question.") % {"number": number})
        return redirect("authoring:question-edit", slug)
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@role_required(Role.AUTHOR)
@require_POST
def question_import(request: HttpRequest) -> HttpResponse:
    """An uploaded .md file: a new question, or the next version of the question with its slug (``into``
    insists on one, from that question's page)."""
    into = request.POST.get("into") or None
    back = reverse("authoring:question-edit", args=[into]) if into else reverse("authoring:questions")
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errors in form.errors.values() for e in errors))
        return redirect(back)
    upload = form.cleaned_data["file"]
    if upload.size > editing.MAX_FILE_BYTES:  # refused before reading it into memory
        messages.error(
            request,
            _("%(name)s: %(size)s bytes; a question file may have at most %(limit)s.")
            % {"name": upload.name, "size": upload.size, "limit": editing.MAX_FILE_BYTES},
        )
        return redirect(back)
    try:
        version = editing.import_file(request.user, upload.name, upload.read(), into=into)
    except editing.QuestionRefused as exc:
        messages.error(request, " ".join(exc.errors.values()))
        return redirect(back)
    messages.success(
        request,
        _("Imported %(name)s as version %(number)s of %(slug)s: candidates see it now.")
        % {"name": upload.name, "number": version.number, "slug": version.slug},
    )
    return redirect("authoring:question-edit", version.slug)

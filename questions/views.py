from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from questions import services
from questions.feedback import feedback_points
from questions.forms import BankFilterForm, PracticeForm, SelfScoreForm
from questions.models import PracticeAnswer, Question, Topic, current_lang
from questions.search import SearchResult
from questions.textsearch import highlight, snippet

PAGE_SIZE = 20


@login_required
def index(request: HttpRequest) -> HttpResponse:
    form = BankFilterForm(request.GET or None)
    if form.is_bound and form.is_valid():
        result, query = form.matching(), form.cleaned_data["q"].strip()
    else:  # no filters, or invalid ones (their errors are shown above the full list)
        result, query = SearchResult(Question.objects.active().values_list("id", flat=True), []), ""
    groups = result.groups
    # Page over ids (a narrow, indexed sort), then load only the rows shown.
    page = Paginator(result.ids, PAGE_SIZE).get_page(request.GET.get("page"))
    items = Question.objects.page_rows(list(page.object_list))
    lang = current_lang()
    answered = set(
        PracticeAnswer.objects.filter(
            user=request.user, for_interview=False, question__in=[q.id for q in items]
        ).values_list("question_id", flat=True)
    )
    rows = [dict(_result_texts(q, lang, groups), question=q, answered=q.id in answered) for q in items]
    query_string = request.GET.copy()
    query_string.pop("page", None)
    return render(
        request,
        "questions/index.html",
        {
            "form": form,
            "rows": rows,
            "page": page,
            "query": query,
            "query_string": query_string.urlencode(),
            "topic_counts": _topic_counts(form.topics),
        },
    )


def _result_texts(question: Question, lang: str, groups) -> dict:
    """Title and snippet in the UI language; when only the other language matched
    the query (a Chinese search on the English UI, say), show that one beneath."""
    texts = {
        "title_html": highlight(question.localized("title", lang), groups),
        "snippet_html": snippet(question.localized("prompt", lang), groups),
    }
    if groups and "<mark>" not in texts["title_html"] + texts["snippet_html"]:
        other = "zh" if lang == "en" else "en"
        texts["other_lang"] = other
        texts["other_title_html"] = highlight(question.localized("title", other), groups)
        texts["other_snippet_html"] = snippet(question.localized("prompt", other), groups)
    return texts


def _topic_counts(topics: list[Topic]) -> list[tuple[Topic, int]]:
    counts = services.active_question_counts()
    return [(topic, counts.get(topic.id, 0)) for topic in topics]


@login_required
def detail(request: HttpRequest, slug: str) -> HttpResponse:
    question = get_object_or_404(Question.objects.select_related("topic").prefetch_related("tags"), slug=slug)
    lang = request.GET.get("content") if request.GET.get("content") in ("en", "zh") else current_lang()
    form = PracticeForm()
    return render(request, "questions/detail.html", _detail_context(request, question, lang, form))


def _detail_context(request, question: Question, lang: str, form: PracticeForm) -> dict:
    unlocked = services.can_see_answer(request.user, question)
    reveal = question.reveals.filter(user=request.user).first()
    return {
        "question": question,
        "lang": lang,
        "other_lang": "zh" if lang == "en" else "en",
        "title": question.localized("title", lang),
        "prompt_html": question.localized("prompt_html", lang),
        "answer_html": question.localized("answer_html", lang) if unlocked else "",
        "rubric": [(p, p.localized("text", lang)) for p in question.rubric.all()] if unlocked else [],
        "unlocked": unlocked,
        "reveal": reveal,
        "form": form,
        "attempts": question.practice_answers.filter(user=request.user, for_interview=False)[:20],
        "related_questions": question.related_questions.active(),
    }


@login_required
@require_POST
def submit_answer(request: HttpRequest, slug: str) -> HttpResponse:
    question = get_object_or_404(Question.objects.active(), slug=slug)
    form = PracticeForm(request.POST)
    if form.is_valid():
        try:
            answer = services.submit_practice_answer(request.user, question, form.cleaned_data["text"])
        except ValidationError as exc:
            for message in exc.message_dict.get("text", []):
                form.add_error("text", message)
        else:
            return redirect("questions:attempt", slug=slug, pk=answer.pk)
    lang = current_lang()
    return render(request, "questions/detail.html", _detail_context(request, question, lang, form), status=400)


@login_required
@require_POST
def reveal(request: HttpRequest, slug: str) -> HttpResponse:
    question = get_object_or_404(Question.objects.active(), slug=slug)
    services.reveal_answer(request.user, question)
    messages.info(request, _("Reference answer revealed. This is recorded in your practice history."))
    return redirect("questions:detail", slug=slug)


@login_required
def attempt(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    answer = get_object_or_404(
        PracticeAnswer.objects.select_related("question__topic"),
        pk=pk,
        question__slug=slug,
        user=request.user,
        for_interview=False,
    )
    question = answer.question
    lang = current_lang()
    points = {p.key: p for p in question.rubric.all()}
    if request.method == "POST":
        form = SelfScoreForm(question, request.POST)
        if form.is_valid():
            services.self_score(answer, form.cleaned_data)
            messages.success(request, _("Self-score saved: %(percent)s%%.") % {"percent": answer.self_score_percent})
            return redirect("questions:attempt", slug=slug, pk=pk)
    else:
        form = SelfScoreForm(question, initial=answer.self_scores or {})
    labels = {key: point.localized("text", lang) for key, point in points.items()}
    coverage = feedback_points([c for c in answer.coverage if c["key"] in points], labels, lang)
    return render(
        request,
        "questions/attempt.html",
        {
            "answer": answer,
            "question": question,
            "title": question.localized("title", lang),
            "answer_html": question.localized("answer_html", lang),
            "coverage": coverage,
            "form": form,
        },
    )


@login_required
def progress(request: HttpRequest) -> HttpResponse:
    rows = services.progress_by_topic(request.user)
    chart = {
        "labels": [row.topic.name for row in rows],
        "strong": [row.strong for row in rows],
        "middle": [row.unscored_or_middle for row in rows],
        "weak": [row.weak for row in rows],
        "unanswered": [row.total - row.answered for row in rows],
    }
    recent = PracticeAnswer.objects.filter(user=request.user, for_interview=False).select_related("question")[:15]
    return render(request, "questions/progress.html", {"rows": rows, "chart": chart, "recent": recent})

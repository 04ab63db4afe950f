"""REST endpoints of the bank. The reference answer and rubric are withheld
under the same rule as the page: interviewers and authors always see them, a
candidate only after answering or revealing."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from questions import services
from questions.forms import BankFilterForm
from questions.models import PracticeAnswer, Question, RubricPoint, Topic


class TopicSerializer(serializers.ModelSerializer):
    question_count = serializers.SerializerMethodField()

    class Meta:
        model = Topic
        fields = ["slug", "name_en", "name_zh", "description_en", "description_zh", "question_count"]

    def get_question_count(self, topic: Topic) -> int:
        return self.context["counts"].get(topic.id, 0)


class SourceSerializer(serializers.Serializer):
    document = serializers.CharField(source="source_document")
    number = serializers.CharField(source="source_number")


class QuestionListSerializer(serializers.ModelSerializer):
    topic = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    tags = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    source = SourceSerializer(source="*")

    class Meta:
        model = Question
        fields = ["slug", "topic", "difficulty", "tags", "title_en", "title_zh", "has_lab", "related_labs", "source"]


class RubricPointSerializer(serializers.ModelSerializer):
    class Meta:
        model = RubricPoint
        fields = ["key", "weight", "text_en", "text_zh", "concepts"]


class QuestionDetailSerializer(QuestionListSerializer):
    related_questions = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    answer_unlocked = serializers.SerializerMethodField()

    class Meta(QuestionListSerializer.Meta):
        fields = QuestionListSerializer.Meta.fields + [
            "related_questions",
            "prompt_en",
            "prompt_zh",
            "prompt_html_en",
            "prompt_html_zh",
            "answer_unlocked",
        ]

    def get_answer_unlocked(self, question: Question) -> bool:
        return services.can_see_answer(self.context["request"].user, question)

    def to_representation(self, question: Question) -> dict:
        data = super().to_representation(question)
        if data["answer_unlocked"]:
            data.update(reference_fields(question))
        return data


def reference_fields(question: Question) -> dict:
    return {
        "answer_en": question.answer_en,
        "answer_zh": question.answer_zh,
        "answer_html_en": question.answer_html_en,
        "answer_html_zh": question.answer_html_zh,
        "rubric": RubricPointSerializer(question.rubric.all(), many=True).data,
    }


class PracticeAnswerSerializer(serializers.ModelSerializer):
    question = serializers.SlugRelatedField(slug_field="slug", queryset=Question.objects.active())
    text = serializers.CharField(max_length=PracticeAnswer.MAX_LENGTH, trim_whitespace=True)

    class Meta:
        model = PracticeAnswer
        fields = [
            "id",
            "question",
            "text",
            "text_html",
            "coverage",
            "coverage_percent",
            "self_scores",
            "self_score_percent",
            "created_at",
            "self_scored_at",
        ]
        read_only_fields = [f for f in fields if f not in ("question", "text")]

    def create(self, validated_data: dict) -> PracticeAnswer:
        try:
            return services.submit_practice_answer(
                self.context["request"].user, validated_data["question"], validated_data["text"]
            )
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc


class SelfScoreSerializer(serializers.Serializer):
    scores = serializers.DictField(child=serializers.IntegerField(min_value=0, max_value=2))


@extend_schema(tags=["questions"])
class TopicViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Topic.objects.all()
    serializer_class = TopicSerializer
    lookup_field = "slug"

    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), "counts": services.active_question_counts()}


@extend_schema(
    tags=["questions"],
    parameters=[
        OpenApiParameter("q", str, description="search words, English or Chinese"),
        OpenApiParameter("topic", str),
        OpenApiParameter("difficulty", int),
        OpenApiParameter("tag", str),
        OpenApiParameter("has_lab", str, enum=["yes", "no"]),
    ],
)
class QuestionViewSet(viewsets.ReadOnlyModelViewSet):
    lookup_field = "slug"

    def get_queryset(self):
        return Question.objects.active().select_related("topic").prefetch_related("tags", "related_questions")

    def get_serializer_class(self):
        return QuestionDetailSerializer if self.action in ("retrieve", "reveal") else QuestionListSerializer

    def list(self, request: Request, *args, **kwargs) -> Response:
        form = BankFilterForm(request.query_params)
        if not form.is_valid():
            raise ValidationError({k: [e["message"] for e in v] for k, v in form.errors.get_json_data().items()})
        rows = Question.objects.page_rows(list(self.paginate_queryset(form.matching().ids)))
        return self.get_paginated_response(self.get_serializer(rows, many=True).data)

    @extend_schema(request=None, responses=QuestionDetailSerializer)
    @action(detail=True, methods=["post"])
    def reveal(self, request: Request, slug: str | None = None) -> Response:
        """Unlock the reference answer and rubric without answering; the reveal is recorded."""
        question = self.get_object()
        services.reveal_answer(request.user, question)
        return Response(QuestionDetailSerializer(question, context=self.get_serializer_context()).data)


@extend_schema(tags=["practice"], parameters=[OpenApiParameter("question", str, description="question slug")])
class PracticeAnswerViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your own practice answers; nobody else's are reachable here."""

    serializer_class = PracticeAnswerSerializer

    def get_queryset(self):
        answers = PracticeAnswer.objects.filter(user=self.request.user, for_interview=False).select_related("question")
        if slug := self.request.query_params.get("question"):
            answers = answers.filter(question__slug=slug)
        return answers

    def create(self, request: Request, *args, **kwargs) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        answer = serializer.save()
        body = {**self.get_serializer(answer).data, "reference": reference_fields(answer.question)}
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(request=SelfScoreSerializer, responses=PracticeAnswerSerializer)
    @action(detail=True, methods=["post"], url_path="self-score")
    def self_score(self, request: Request, pk: str | None = None) -> Response:
        """Score each rubric point 0 (missed), 1 (partly) or 2 (fully)."""
        answer = get_object_or_404(self.get_queryset(), pk=pk)
        payload = SelfScoreSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            services.self_score(answer, payload.validated_data["scores"])
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc
        return Response(self.get_serializer(answer).data)

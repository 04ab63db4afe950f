from django.contrib import admin

from questions.models import PracticeAnswer, Question, Reveal, RubricPoint, Topic


class RubricPointInline(admin.TabularInline):
    model = RubricPoint
    extra = 0
    fields = ("position", "key", "weight", "text_en", "text_zh", "concepts")


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ("slug", "topic", "difficulty", "source_document", "source_number", "has_lab", "retired")
    list_filter = ("topic", "difficulty", "has_lab", "retired")
    search_fields = ("slug", "title_en", "title_zh")
    inlines = [RubricPointInline]
    readonly_fields = ("file_path", "content_hash", "created_at", "updated_at")


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("slug", "name_en", "name_zh", "position")


@admin.register(PracticeAnswer)
class PracticeAnswerAdmin(admin.ModelAdmin):
    list_display = ("user", "question", "coverage_percent", "self_score_percent", "created_at")
    list_filter = ("question__topic",)
    raw_id_fields = ("user", "question")


@admin.register(Reveal)
class RevealAdmin(admin.ModelAdmin):
    list_display = ("user", "question", "via", "created_at")

from django.contrib import admin

from labs.models import Attempt, Lab, LabRun, LabVersion


@admin.register(Lab)
class LabAdmin(admin.ModelAdmin):
    list_display = ("slug", "family", "difficulty", "current", "retired")
    list_filter = ("family", "retired")
    search_fields = ("slug", "title_en", "title_zh")


@admin.register(LabVersion)
class LabVersionAdmin(admin.ModelAdmin):
    list_display = ("lab", "number", "validated_at", "created_at")
    list_filter = ("lab",)
    readonly_fields = ("content_hash", "spec", "validation", "baseline", "created_at")


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ("user", "version", "seed", "status", "diagnosis_score", "best_score", "created_at")
    list_filter = ("status", "version__lab")
    raw_id_fields = ("user",)


@admin.register(LabRun)
class LabRunAdmin(admin.ModelAdmin):
    list_display = ("run", "kind", "version", "variant", "passed", "fix_percent", "score", "graded_at")
    list_filter = ("kind", "passed")
    raw_id_fields = ("run", "attempt")

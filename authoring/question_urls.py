"""Author pages and endpoints for questions, under /author/questions/."""

from django.urls import path

from authoring import question_api, question_views

urlpatterns = [
    path("questions/", question_views.question_list, name="questions"),
    path("questions/new/", question_views.question_new, name="question-new"),
    path("questions/import/", question_views.question_import, name="question-import"),
    path("questions/api/check/", question_api.QuestionCheckView.as_view(), name="api-question-check"),
    path("questions/<slug:slug>/", question_views.question_edit, name="question-edit"),
    path("questions/<slug:slug>/export/", question_views.question_export, name="question-export"),
]

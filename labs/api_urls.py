from django.urls import path

from labs import api

urlpatterns = [
    path("", api.LabListView.as_view(), name="api-labs"),
    path("<slug:slug>/attempts/", api.AttemptStartView.as_view(), name="api-lab-attempt-start"),
    path("attempts/<int:pk>/", api.AttemptView.as_view(), name="api-attempt"),
    path("attempts/<int:pk>/files/", api.AttemptFilesView.as_view(), name="api-attempt-files"),
    path("attempts/<int:pk>/runs/", api.AttemptRunsView.as_view(), name="api-attempt-runs"),
    path("attempts/<int:pk>/runs/<int:run_pk>/", api.AttemptRunView.as_view(), name="api-attempt-run"),
    path(
        "attempts/<int:pk>/runs/<int:run_pk>/<str:action>/",
        api.AttemptRunActionView.as_view(),
        name="api-attempt-run-action",
    ),
    path("attempts/<int:pk>/diagnosis/", api.AttemptDiagnosisView.as_view(), name="api-attempt-diagnosis"),
    path(
        "attempts/<int:pk>/diagnosis/draft/",
        api.AttemptDiagnosisDraftView.as_view(),
        name="api-attempt-diagnosis-draft",
    ),
    path("attempts/<int:pk>/hints/<int:index>/", api.AttemptHintView.as_view(), name="api-attempt-hint"),
    path("attempts/<int:pk>/timeline/", api.AttemptTimelineView.as_view(), name="api-attempt-timeline"),
]

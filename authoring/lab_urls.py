"""Author pages and endpoints for labs, under /author/labs/."""

from django.urls import path

from authoring import lab_api, lab_views

urlpatterns = [
    path("labs/", lab_views.index, name="labs"),
    path("labs/new/", lab_views.new_draft, name="lab-new"),
    path("labs/drafts/<int:pk>/", lab_views.draft_editor, name="lab-draft"),
    path("labs/drafts/<int:pk>/preview/", lab_views.draft_preview, name="lab-draft-preview"),
    path("labs/drafts/<int:pk>/preview/start/", lab_views.draft_preview_start, name="lab-draft-preview-start"),
    path("labs/drafts/<int:pk>/validate/", lab_views.draft_validate, name="lab-draft-validate"),
    path("labs/drafts/<int:pk>/discard/", lab_views.draft_discard, name="lab-draft-discard"),
    path("labs/validations/<int:pk>/", lab_views.validation_page, name="lab-validation"),
    path("labs/api/drafts/<int:pk>/", lab_api.DraftView.as_view(), name="api-lab-draft"),
    path("labs/api/drafts/<int:pk>/check/", lab_api.DraftCheckView.as_view(), name="api-lab-draft-check"),
    path("labs/api/validations/<int:pk>/", lab_api.ValidationView.as_view(), name="api-lab-validation"),
    path(
        "labs/api/validations/<int:pk>/cancel/",
        lab_api.ValidationCancelView.as_view(),
        name="api-lab-validation-cancel",
    ),
    path("labs/<slug:slug>/", lab_views.lab_page, name="lab"),
    path("labs/<slug:slug>/versions/<int:number>/diff/", lab_views.version_diff, name="lab-version-diff"),
    path("labs/<slug:slug>/versions/<int:number>/export.zip", lab_views.version_export, name="lab-version-export"),
    path("labs/<slug:slug>/versions/<int:number>/publish/", lab_views.version_publish, name="lab-version-publish"),
    path("labs/<slug:slug>/versions/<int:number>/rollback/", lab_views.version_rollback, name="lab-version-rollback"),
    path("labs/<slug:slug>/versions/<int:number>/draft/", lab_views.version_draft, name="lab-version-draft"),
]

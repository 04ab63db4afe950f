"""The candidate's pages (under /interviews/) and endpoints (under /api/interviews/)."""

from django.urls import path

from interviews import candidate_api, candidate_views

urlpatterns: list = [
    path("join/<str:token>/", candidate_views.join, name="join"),
    path("take/<int:pk>/", candidate_views.take, name="take"),
    path("take/<int:pk>/start/", candidate_views.start, name="take-start"),
    path("take/<int:pk>/finish/", candidate_views.finish, name="take-finish"),
    path("take/<int:pk>/items/<int:item_pk>/", candidate_views.item_page, name="take-item"),
    path("take/<int:pk>/items/<int:item_pk>/open/", candidate_views.open_item, name="take-item-open"),
    path("take/<int:pk>/items/<int:item_pk>/save/", candidate_views.save_item, name="take-item-save"),
    path("take/<int:pk>/items/<int:item_pk>/done/", candidate_views.done_item, name="take-item-done"),
]
api_urlpatterns: list = [
    path("take/<int:pk>/", candidate_api.TakeStateView.as_view(), name="api-interview-take"),
    path("take/<int:pk>/start/", candidate_api.TakeStartView.as_view(), name="api-interview-take-start"),
    path("take/<int:pk>/finish/", candidate_api.TakeFinishView.as_view(), name="api-interview-take-finish"),
    path(
        "take/<int:pk>/items/<int:item_pk>/open/",
        candidate_api.TakeItemOpenView.as_view(),
        name="api-interview-take-item-open",
    ),
    path(
        "take/<int:pk>/items/<int:item_pk>/draft/",
        candidate_api.TakeDraftView.as_view(),
        name="api-interview-take-item-draft",
    ),
    path(
        "take/<int:pk>/items/<int:item_pk>/done/",
        candidate_api.TakeDoneView.as_view(),
        name="api-interview-take-item-done",
    ),
    path("preview/", candidate_api.PreviewView.as_view(), name="api-interview-preview"),
]

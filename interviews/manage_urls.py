"""The interviewer's pages and the live API."""

from django.urls import path

from interviews import manage_api, manage_views

urlpatterns: list = [
    path("", manage_views.index, name="index"),
    path("templates/", manage_views.template_list, name="templates"),
    path("templates/new/", manage_views.template_create, name="template-new"),
    path("templates/<int:pk>/", manage_views.template_detail, name="template"),
    path("templates/<int:pk>/edit/", manage_views.template_edit, name="template-edit"),
    path("templates/<int:pk>/copy/", manage_views.template_copy, name="template-copy"),
    path("new/", manage_views.interview_create, name="new"),
    path("<int:pk>/", manage_views.interview_detail, name="detail"),
    path("<int:pk>/invite/", manage_views.invite, name="invite"),
    path("<int:pk>/invitations/<int:invitation_pk>/revoke/", manage_views.revoke, name="revoke"),
    path("<int:pk>/live/", manage_views.live_page, name="live"),
    path("<int:pk>/live/<str:action>/", manage_views.live_action, name="live-action"),
]
api_urlpatterns: list = [
    path("<int:pk>/live/", manage_api.LiveView.as_view(), name="api-interview-live"),
    path("<int:pk>/live/<str:action>/", manage_api.LiveActionView.as_view(), name="api-interview-live-action"),
]

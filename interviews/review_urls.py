"""Review, scoring and the combined scorecard: pages and endpoints."""

from django.urls import path

from interviews import review_api, review_views

urlpatterns: list = [
    path("<int:pk>/review/", review_views.review, name="review"),
    path("<int:pk>/score/", review_views.score, name="score"),
    path("<int:pk>/scorecard/", review_views.scorecard, name="scorecard"),
    path("<int:pk>/scorecard/export.<str:fmt>", review_views.scorecard_download, name="scorecard_export"),
]
api_urlpatterns: list = [
    path("<int:pk>/scorecard/", review_api.CombinedScorecardView.as_view(), name="api-interview-scorecard"),
    path("<int:pk>/scorecard/mine/", review_api.MyScorecardView.as_view(), name="api-interview-my-scorecard"),
]

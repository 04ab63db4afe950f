from django.urls import path

from questions import views

app_name = "questions"
urlpatterns = [
    path("", views.index, name="index"),
    path("progress/", views.progress, name="progress"),
    path("<slug:slug>/", views.detail, name="detail"),
    path("<slug:slug>/answer/", views.submit_answer, name="answer"),
    path("<slug:slug>/reveal/", views.reveal, name="reveal"),
    path("<slug:slug>/attempts/<int:pk>/", views.attempt, name="attempt"),
]

from django.urls import path

from sandbox import views

app_name = "sandbox"
urlpatterns = [
    path("", views.index, name="index"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/live/", views.run_live, name="run-live"),
    path("runs/<int:pk>/<slug:action>/", views.run_action, name="run-action"),
]

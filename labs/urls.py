from django.urls import path

from labs import views

app_name = "labs"
urlpatterns = [
    path("", views.index, name="index"),
    path("attempts/<int:pk>/", views.workspace, name="workspace"),
    path("attempts/<int:pk>/diff/", views.diff, name="diff"),
    path("attempts/<int:pk>/fixes/<int:run_pk>/", views.fix_result, name="result"),
    path("<slug:slug>/", views.lab_detail, name="lab"),
    path("<slug:slug>/start/", views.start, name="start"),
]

from django.urls import path

from interviews import views

app_name = "interviews"
urlpatterns = [path("", views.index, name="index")]

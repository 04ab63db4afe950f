from django.urls import path

from sandbox import views

app_name = "sandbox"
urlpatterns = [path("", views.index, name="index")]

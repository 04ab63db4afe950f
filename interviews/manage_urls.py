"""Pages and endpoints of this area of interviews (filled in by its views module)."""

from django.urls import path

from interviews import views

urlpatterns: list = [path("", views.index, name="index")]
api_urlpatterns: list = []

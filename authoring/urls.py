from django.urls import path

from authoring import lab_urls, question_urls, views

app_name = "authoring"
urlpatterns = [path("", views.home, name="home"), *lab_urls.urlpatterns, *question_urls.urlpatterns]

from authoring import lab_urls, question_urls

app_name = "authoring"
urlpatterns = [*lab_urls.urlpatterns, *question_urls.urlpatterns]

from interviews import candidate_urls, manage_urls, review_urls

app_name = "interviews"
urlpatterns = [*manage_urls.urlpatterns, *candidate_urls.urlpatterns, *review_urls.urlpatterns]

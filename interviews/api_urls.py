from interviews import candidate_urls, manage_urls, review_urls

urlpatterns = [*manage_urls.api_urlpatterns, *candidate_urls.api_urlpatterns, *review_urls.api_urlpatterns]

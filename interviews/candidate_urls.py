"""Pages and endpoints of this area of interviews (filled in by its views module)."""

urlpatterns: list = []
api_urlpatterns: list = []

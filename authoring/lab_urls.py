"""Author pages for labs (filled in by its views module)."""

urlpatterns: list = []

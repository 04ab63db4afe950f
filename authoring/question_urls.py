"""Author pages for questions (filled in by its views module)."""

urlpatterns: list = []

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.authtoken.views import obtain_auth_token

from faultline import views
from faultline.api.views import MeView

api_patterns = [
    path("me/", MeView.as_view(), name="api-me"),
    path("auth/token/", obtain_auth_token, name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("sandbox/", include("sandbox.api_urls")),
    path("labs/", include("labs.api_urls")),
    path("interviews/", include("interviews.api_urls")),
    path("", include("questions.api_urls")),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("api/", include(api_patterns)),
    path("questions/", include("questions.urls")),
    path("labs/", include("labs.urls")),
    path("sandbox/", include("sandbox.urls")),
    path("interviews/", include("interviews.urls")),
    path("author/", include("authoring.urls")),
]

from django.urls import path
from rest_framework.routers import DefaultRouter

from sandbox.api import RunViewSet, SandboxStatusView

router = DefaultRouter()
router.include_root_view = False
router.register("runs", RunViewSet, basename="run")
urlpatterns = [path("status/", SandboxStatusView.as_view(), name="api-sandbox-status"), *router.urls]

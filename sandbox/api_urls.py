from django.urls import path

from sandbox.api import SandboxStatusView

urlpatterns = [path("status/", SandboxStatusView.as_view(), name="api-sandbox-status")]

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from faultline.roles import HasRole, Role
from sandbox.selection import choose_backend


class SandboxStatusView(APIView):
    """Which sandbox backend this platform runs lab programs on, and whether it answers."""

    permission_classes = [HasRole]
    required_roles = (Role.AUTHOR,)

    @extend_schema(
        responses=inline_serializer(
            "SandboxStatus",
            {
                "backend": serializers.CharField(),
                "ok": serializers.BooleanField(),
                "isolated": serializers.BooleanField(),
                "detail": serializers.CharField(),
            },
        )
    )
    def get(self, request: Request) -> Response:
        choice = choose_backend()
        return Response(
            {"backend": choice.name, "ok": choice.ok, "isolated": choice.name == "docker", "detail": choice.detail}
        )

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.roles import user_roles


class MeView(APIView):
    """The signed-in user and the roles the platform grants them."""

    @extend_schema(
        responses=inline_serializer(
            "Me",
            {
                "username": serializers.CharField(),
                "roles": serializers.ListField(child=serializers.CharField()),
                "is_staff": serializers.BooleanField(),
            },
        )
    )
    def get(self, request: Request) -> Response:
        user = request.user
        return Response(
            {
                "username": user.username,
                "roles": sorted(r.value for r in user_roles(user)),
                "is_staff": user.is_staff,
            }
        )

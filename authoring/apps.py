from django.apps import AppConfig


class AuthoringConfig(AppConfig):
    name = "authoring"

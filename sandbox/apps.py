from django.apps import AppConfig


class SandboxConfig(AppConfig):
    name = "sandbox"

    def ready(self) -> None:
        from sandbox import signals  # noqa: F401 - connects the worker hooks

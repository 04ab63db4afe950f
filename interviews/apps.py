from django.apps import AppConfig


class InterviewsConfig(AppConfig):
    name = "interviews"

    def ready(self) -> None:
        from interviews.receivers import on_attempt_scored
        from labs.signals import attempt_scored

        attempt_scored.connect(on_attempt_scored, dispatch_uid="interviews.on_attempt_scored")

from django.apps import AppConfig


class LabsConfig(AppConfig):
    name = "labs"

    def ready(self) -> None:
        # Labs judges the runs it asked for; the sandbox only knows that a judge exists for a purpose.
        from labs.grading import grade_run
        from sandbox.judging import register_judge

        register_judge("grade", grade_run)
        register_judge("validate", grade_run)

from django.apps import AppConfig


class LabsConfig(AppConfig):
    name = "labs"

    def ready(self) -> None:
        from labs.grading import grade_run
        from sandbox.judging import register_judge

        # The sandbox measures runs; labs decides whether a fix or a validation run passed.
        for purpose in ("grade", "validate"):
            register_judge(purpose, lambda run_id, _result: grade_run(run_id))

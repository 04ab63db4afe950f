from django.apps import AppConfig


class LabsConfig(AppConfig):
    name = "labs"

    def ready(self) -> None:
        # Labs judges the runs it asked for; the sandbox only knows that a judge exists for a purpose.
        from labs.grader_sandbox import start_standby, stop_standby
        from labs.grading import grade_run
        from sandbox.judging import register_judge
        from sandbox.signals import on_run_process

        register_judge("grade", grade_run)
        register_judge("validate", grade_run)
        # A grader container on standby in every worker process: results do not wait for one to start.
        on_run_process(start_standby, stop_standby)

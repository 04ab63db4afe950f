"""How long a candidate waits for a fix's result after the program ends.

    .venv/bin/python manage.py buildimages --kind cpu        # the lab image (Docker backend)
    .venv/bin/python tests/perf/bench_grading_latency.py      # 20 gradings of nan-lr-unnormalised, Docker
    .venv/bin/python tests/perf/bench_grading_latency.py --lab correctness-missing-eval --count 10
    .venv/bin/python tests/perf/bench_grading_latency.py --no-standby   # every grader in a container of its own

One Python process plays the worker on a scratch SQLite database: it submits the lab's reference
solution as a candidate's fix ``--count`` times and executes each through ``sandbox.runner.execute_run``,
the function a Celery worker calls. For every grading it records three moments: the program's output
ending (its last line, read from the sandbox), the lab's grader starting, and the result being stored.

- ``after end``: output end → result stored. What the candidate waits for once the program is done
  (container teardown, artifact collection, the grader, the checks, the database writes).
- ``grader``: the part of it spent in the lab's grader container.

As in a worker process, a grader container waits on standby (torch imported) and each grading uses it;
before each grading the benchmark waits until the next standby is ready, as the seconds between two
candidates' fixes would. ``--no-standby`` starts every grader's container when its grading begins.

It prints p50 and p95 of both, the program's own run time for scale, and a last line
``after_end_p50_s=… after_end_p95_s=… grader_p50_s=… grader_p95_s=…``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

from scratch import setup_django

REPO = Path(__file__).resolve().parents[2]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class TimedBox:
    """A sandbox whose output stream notes the moment it ended (the program is done writing)."""

    def __init__(self, box, marks: dict) -> None:
        self._box, self._marks = box, marks

    def __getattr__(self, name):
        return getattr(self._box, name)

    def lines(self):
        yield from self._box.lines()
        self._marks["output_end"] = time.monotonic()


def wait_for_standby(grader_sandbox, disabled: bool) -> None:
    slot = grader_sandbox._here()
    deadline = time.monotonic() + 120
    while not disabled and slot is not None and slot.ready is None:
        if time.monotonic() > deadline:
            raise SystemExit("no standby grader after 120 s")
        time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lab", default="nan-lr-unnormalised")
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--backend", choices=("docker", "process"), default="docker")
    parser.add_argument("--no-standby", action="store_true", help="no grader container on standby")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="faultline-bench-grading-") as var_dir:
        setup_django(var_dir, f"sqlite:///{var_dir}/bench.sqlite3", SANDBOX_BACKEND=args.backend,
                     SANDBOX_WARM_POOL_CPU="0", LAB_RUNS_PER_HOUR="10000")  # fmt: skip
        from unittest import mock

        from django.contrib.auth.models import User
        from django.core.management import call_command
        from django.utils import timezone

        from labs import grader_sandbox, services
        from labs.models import Lab
        from labs.services import program_for
        from sandbox import judging, runner
        from sandbox.models import Run

        call_command("loadbank", verbosity=0, stdout=io.StringIO())
        call_command("loadlabs", verbosity=0, stdout=io.StringIO())
        lab = Lab.objects.get(slug=args.lab)
        version = lab.versions.order_by("-number").first()
        version.validated_at = timezone.now()
        version.save(update_fields=["validated_at"])
        Lab.objects.filter(pk=lab.pk).update(current=version)
        lab.refresh_from_db()
        user = User.objects.create_user("bench-candidate")

        marks: dict = {}
        real_open = runner.open_sandbox

        @contextlib.contextmanager
        def timed_open(*a, **kw):
            with real_open(*a, **kw) as box:
                yield TimedBox(box, marks)

        judge = judging.judge_for("grade")

        def timed_judge(run_id, result):
            marks["grader_start"] = time.monotonic()
            try:
                return judge(run_id, result)
            finally:
                marks["grader_end"] = time.monotonic()

        after_end, grader, program = [], [], []
        with mock.patch.object(runner, "open_sandbox", timed_open), mock.patch("sandbox.services.enqueue_run"):
            judging.register_judge("grade", timed_judge)
            if not args.no_standby:
                grader_sandbox.start_standby("bench@localhost")
            for i in range(args.count):
                wait_for_standby(grader_sandbox, args.no_standby)
                attempt = services.start_attempt(user, lab)
                solution = program_for(version, attempt.seed, "solution")
                services.save_files(attempt, {**attempt.files, **{n: solution[n] for n in version.spec["solution"]}})
                lab_run = services.start_run(attempt, fix=True)
                marks.clear()
                runner.execute_run(lab_run.run_id)
                stored = time.monotonic()
                run = Run.objects.get(pk=lab_run.run_id)
                lab_run.refresh_from_db()
                if run.status not in (Run.Status.PASSED, Run.Status.FAILED) or "grader_end" not in marks:
                    raise SystemExit(f"grading {i + 1} ended {run.status}: {run.error_message}")
                after_end.append(stored - marks["output_end"])
                grader.append(marks["grader_end"] - marks["grader_start"])
                program.append(run.duration_seconds or 0.0)
                print(f"{i + 1:>3}: program {program[-1]:5.1f} s, after end {after_end[-1]:5.2f} s, "
                      f"grader {grader[-1]:5.2f} s, passed={lab_run.passed}", file=sys.stderr)  # fmt: skip
            judging.register_judge("grade", judge)
            grader_sandbox.stop_standby()

    standby = "every grader in its own new container" if args.no_standby else "grader on standby"
    print(f"{args.lab}, {args.count} gradings, {args.backend} backend, {standby}")
    print(f"{'':<12} {'p50':>7} {'p95':>7}  (s)")
    for name, values in (("program", program), ("after end", after_end), ("grader", grader)):
        print(f"{name:<12} {statistics.median(values):>7.2f} {percentile(values, 0.95):>7.2f}")
    print(
        f"after_end_p50_s={statistics.median(after_end):.2f} after_end_p95_s={percentile(after_end, 0.95):.2f} "
        f"grader_p50_s={statistics.median(grader):.2f} grader_p95_s={percentile(grader, 0.95):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Worker resident memory across many artifact-heavy runs, with and without returning freed heap.

    .venv/bin/python manage.py buildimages --kind cpu     # the lab image (Docker backend)
    .venv/bin/python tests/perf/bench_worker_memory.py    # 100 runs per mode, Docker
    .venv/bin/python tests/perf/bench_worker_memory.py --runs 30 --backend process

Each mode runs in its own fresh Python process that plays the worker: it executes ``--runs`` runs one
after another through ``sandbox.runner.execute_run``, the function a Celery worker calls, on a scratch
SQLite database. Every run writes ``--files`` output files of ``--file-mib`` MiB each (random bytes, so
nothing compresses) and prints about 1 MB of log, so the worker copies close to the per-run artifact cap
through its own memory each time. After every run the process reads its own ``VmRSS``.

``untrimmed`` turns off ``sandbox.memtrim.release_free_memory`` (what the worker did before it existed);
``trimmed`` is the worker as shipped. The figures are RSS after the first run, after the tenth and after
the last, and the growth from the tenth to the last (the first runs pay for imports and caches). The
last line is ``untrimmed_growth_mib=… trimmed_growth_mib=… trimmed_last_mib=…``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from scratch import setup_django

REPO = Path(__file__).resolve().parents[2]
PROGRAM = """\
import os
out = os.environ["FAULTLINE_OUTPUT_DIR"]
for i in range({files}):
    with open(os.path.join(out, f"shard-{{i:03d}}.bin"), "wb") as f:
        f.write(os.urandom({file_mib} * 1024 * 1024))
for i in range(8000):
    print("log line", i, "x" * 110)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--files", type=int, default=14, help="output files per run")
    parser.add_argument("--file-mib", type=int, default=4, help="size of each output file")
    parser.add_argument("--backend", choices=("docker", "process"), default="docker")
    parser.add_argument("--child", choices=("untrimmed", "trimmed"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    results = {}
    for mode in ("untrimmed", "trimmed"):
        command = [sys.executable, __file__, "--child", mode, "--runs", str(args.runs), "--files", str(args.files),
                   "--file-mib", str(args.file_mib), "--backend", args.backend]  # fmt: skip
        print(f"{mode}: {args.runs} runs ({args.backend})", file=sys.stderr)
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
        results[mode] = json.loads(done.stdout.strip().splitlines()[-1])

    print(f"{'mode':<10} {'after 1':>9} {'after 10':>9} {'after last':>11} {'growth 10→last':>15}  (MiB)")
    for mode, rss in results.items():
        print(f"{mode:<10} {rss[0]:>9.1f} {rss[9]:>9.1f} {rss[-1]:>11.1f} {rss[-1] - rss[9]:>15.1f}")
    untrimmed, trimmed = results["untrimmed"], results["trimmed"]
    print(
        f"untrimmed_growth_mib={untrimmed[-1] - untrimmed[9]:.1f} trimmed_growth_mib={trimmed[-1] - trimmed[9]:.1f} "
        f"trimmed_last_mib={trimmed[-1]:.1f}"
    )
    return 0


def child(args) -> int:
    with tempfile.TemporaryDirectory(prefix="faultline-bench-memory-") as var_dir:
        database = f"sqlite:///{var_dir}/bench.sqlite3"
        setup_django(var_dir, database, SANDBOX_BACKEND=args.backend, SANDBOX_WARM_POOL_CPU="0")
        from sandbox import memtrim, runner, services
        from sandbox.models import Run

        if args.child == "untrimmed":
            runner.release_free_memory = lambda: False
            memtrim.release_free_memory = lambda: False
        program = PROGRAM.format(files=args.files, file_mib=args.file_mib)
        rss = []
        for index in range(args.runs):
            run = services.create_run(owner=None, files={"main.py": program}, memory_mb=1024, enqueue=False)
            runner.execute_run(run.pk, worker_name="bench-memory")
            run.refresh_from_db()
            if run.status != Run.Status.PASSED:
                raise SystemExit(f"run {index} ended {run.status}: {run.error_message}")
            if index == 0:
                kept = sum(a.size for a in run.artifacts.all())
                print(f"  artifacts kept per run: {kept / 2**20:.1f} MiB", file=sys.stderr)
            Run.objects.filter(pk=run.pk).delete()  # the database file must not be what grows
            rss.append(resident_mib())
            if index % 10 == 9:
                print(f"  after run {index + 1}: {rss[-1]:.1f} MiB", file=sys.stderr)
        print(json.dumps(rss))
    return 0


def resident_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc/self/status")


if __name__ == "__main__":
    sys.exit(main())

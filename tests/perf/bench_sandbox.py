"""Platform overhead of a lab run, cold containers against the warm pool, through a real Celery worker.

    .venv/bin/python manage.py buildimages --kind cpu        # the lab image the worker runs
    .venv/bin/python tests/perf/bench_sandbox.py             # Redis at redis://127.0.0.1:6379/0, SQLite
    .venv/bin/python tests/perf/bench_sandbox.py --runs 30 --broker redis://127.0.0.1:6379/0 \\
        --database postgres://faultline:faultline@127.0.0.1:5432/faultline   # a scratch database on that server

Needs a Docker engine and a Redis broker. For each mode it starts one Celery worker (solo pool, Docker
backend) in a subprocess: first with SANDBOX_WARM_POOL_CPU=0 (every run cold), then with the pool on.
Everything it makes is its own: a temporary FAULTLINE_VAR_DIR with a SQLite file (or a scratch
PostgreSQL database), a queue and a worker name nobody else uses, and the containers labelled with that
worker name, which it removes at the end.

Each mode gets one unmeasured warm-up run, then ``--runs`` runs of a trivial torch program, one at a time.
Before each run the bench waits until the worker is idle: the previous container is gone and, in warm
mode, the pool holds a container whose zygote has finished importing torch. So the numbers are the
latency of a run that arrives at a worker with nothing else to do, not throughput under load.

Per run: overhead = (finished_at - created_at) - the program's own work, which the program times
itself from after its imports to its end and reports as a metric. Everything else, from the task
leaving the broker to the result in the database, is the platform's: claiming the run, starting a
container, starting Python and importing torch (which is what the warm pool exists to remove),
copying the output out and recording the result. The rank's launch overhead alone (end-to-end minus
the rank's own ``rank_exit`` duration, which in a cold run includes Python start-up and the torch
import) is printed too. The last line is ``cold_p50=… warm_p50=… ratio=…`` (overhead, seconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from scratch import setup_django

REPO = Path(__file__).resolve().parents[2]
PROGRAM = (
    "import time\nimport torch\nfrom faultline_harness import report\n"
    "started = time.perf_counter()\nprint(torch.ones(3).sum().item())\n"
    'report.metric("work_seconds", time.perf_counter() - started)\n'
)
WARM_TARGET_S = 0.3
RATIO_TARGET = 5.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="measured runs per mode")
    parser.add_argument("--pool-size", type=int, default=1, help="SANDBOX_WARM_POOL_CPU in warm mode")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--database", help="PostgreSQL server URL; a scratch database faultline_bench_sandbox is made")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for one run or one ready pool")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="faultline-bench-sandbox-") as var_dir:
        database = scratch_postgres(args.database) if args.database else f"sqlite:///{var_dir}/bench.sqlite3"
        setup_django(var_dir, database, CELERY_BROKER_URL=args.broker, SANDBOX_BACKEND="docker")
        check_image()
        results = {}
        for mode, pool_size in (("cold", 0), ("warm", args.pool_size)):
            results[mode] = measure_mode(mode, pool_size, args, Path(var_dir))
    report(results, args)
    return 0


def scratch_postgres(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS faultline_bench_sandbox")
        conn.execute("CREATE DATABASE faultline_bench_sandbox")
    return url.rsplit("/", 1)[0] + "/faultline_bench_sandbox"


def check_image() -> None:
    import docker

    from sandbox.images.tags import image_tag

    tag = image_tag("cpu")
    try:
        docker.from_env().images.get(tag)
    except docker.errors.ImageNotFound:
        raise SystemExit(f"{tag} is missing: run .venv/bin/python manage.py buildimages --kind cpu") from None


def measure_mode(mode: str, pool_size: int, args, var_dir: Path) -> list[dict]:
    node = f"bench-{mode}-{uuid.uuid4().hex[:8]}@bench"
    queue = f"bench-sandbox-{uuid.uuid4().hex[:8]}"
    log_path = var_dir / f"worker-{mode}.log"
    env = dict(os.environ, SANDBOX_WARM_POOL_CPU=str(pool_size))
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "faultline", "worker", "--pool", "solo", "--queues", queue,
         "--hostname", node, "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
        cwd=REPO, env=env, stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    samples = []
    try:
        print(f"{mode}: worker {node}, pool size {pool_size}", file=sys.stderr)
        for index in range(args.runs + 1):
            wait_idle(node, pool_size, args.timeout, worker, log_path)
            sample = one_run(queue, args.timeout, worker, log_path)
            if index > 0:  # the first run warms up the worker's own imports and connections
                samples.append(sample)
                print(
                    f"  run {index:>2}: overhead {sample['overhead']:.3f}s  end-to-end {sample['total']:.3f}s  "
                    f"program {sample['program']:.3f}s  warm={sample['warm']}",
                    file=sys.stderr,
                )
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
        remove_containers(node)
    return samples


def one_run(queue: str, timeout: float, worker: subprocess.Popen, log_path: Path) -> dict:
    from sandbox import services
    from sandbox.models import Run
    from sandbox.tasks import execute_run

    run = services.create_run(owner=None, files={"main.py": PROGRAM}, enqueue=False)
    execute_run.apply_async(args=[run.pk], queue=queue)
    deadline = time.monotonic() + timeout
    while Run.objects.filter(pk=run.pk).exclude(status__in=list(Run.TERMINAL)).exists():
        if time.monotonic() > deadline or worker.poll() is not None:
            raise SystemExit(f"run {run.pk} did not finish; worker log:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.01)
    run.refresh_from_db()
    if run.status != "passed":
        raise SystemExit(f"run {run.pk} ended {run.status}: {run.error_message}")
    rank_exit = run.events.filter(kind="rank_exit").first()
    work = run.events.get(kind="metric", data__name="work_seconds").data["value"]
    total = (run.finished_at - run.created_at).total_seconds()
    program = float(rank_exit.data["duration"])
    return {
        "total": total,
        "program": program,
        "work": float(work),
        "overhead": total - float(work),
        "launch": total - program,
        "to_running": (run.started_at - run.created_at).total_seconds(),
        "warm": container_was_pooled(run.container_id),
    }


_pooled_ids: set[str] = set()


def container_was_pooled(container_id: str) -> bool:
    return container_id in _pooled_ids


def wait_idle(node: str, pool_size: int, timeout: float, worker: subprocess.Popen, log_path: Path) -> None:
    """No run container of this worker left and, with a pool, that many ready zygotes."""
    import docker

    client = docker.from_env()
    deadline = time.monotonic() + timeout
    while True:
        if worker.poll() is not None:
            raise SystemExit(f"the worker exited; its log:\n{log_path.read_text()[-3000:]}")
        # The plain listing (no per-container inspect, which fails for one removed meanwhile).
        mine = client.api.containers(all=True, filters={"label": f"faultline.worker={node}"})
        busy = [c for c in mine if "faultline.run" in c["Labels"] or c["State"] != "running"]
        pooled = [c["Id"] for c in mine if "faultline.pool" in c["Labels"] and c not in busy]
        _pooled_ids.update(pooled)
        if not busy and len(pooled) >= pool_size and all(zygote_ready(client, c) for c in pooled):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"worker {node} did not become idle; its log:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)


def zygote_ready(client, container_id: str) -> bool:
    import docker

    try:
        return b"@@fl-zygote-ready" in client.api.logs(container_id, stdout=True, stderr=False, tail=1)
    except docker.errors.APIError:  # being removed (the previous run's) or already gone
        return False


def remove_containers(node: str) -> None:
    import docker

    client = docker.from_env()
    for container in client.api.containers(all=True, filters={"label": f"faultline.worker={node}"}):
        try:
            client.api.remove_container(container["Id"], force=True)
        except docker.errors.NotFound:
            pass


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def report(results: dict[str, list[dict]], args) -> None:
    print(f"sandbox overhead benchmark: {args.runs} sequential runs per mode of: {PROGRAM}")
    print(f"{'mode':<6} {'metric':<26} {'p50 s':>8} {'p95 s':>8}")
    for mode, samples in results.items():
        for key, label in (
            ("overhead", "overhead (total - work)"),
            ("total", "end-to-end (enqueue→result)"),
            ("work", "program's own work"),
            ("program", "rank duration"),
            ("launch", "total - rank duration"),
            ("to_running", "enqueue→running"),
        ):
            values = [s[key] for s in samples]
            print(f"{mode:<6} {label:<26} {percentile(values, 0.5):>8.3f} {percentile(values, 0.95):>8.3f}")
        warm_share = sum(s["warm"] for s in samples)
        print(f"{mode:<6} {'runs on a pool container':<26} {warm_share:>8d} / {len(samples)}")
    cold_total = statistics.median(s["total"] for s in results["cold"])
    warm_total = statistics.median(s["total"] for s in results["warm"])
    print(f"end-to-end: cold_p50={cold_total:.3f} warm_p50={warm_total:.3f} ratio={cold_total / warm_total:.1f}")
    cold_launch = statistics.median(s["launch"] for s in results["cold"])
    warm_launch = statistics.median(s["launch"] for s in results["warm"])
    print(f"beyond the rank's duration: cold_p50={cold_launch:.3f} warm_p50={warm_launch:.3f}")
    cold = statistics.median(s["overhead"] for s in results["cold"])
    warm = statistics.median(s["overhead"] for s in results["warm"])
    ratio = cold / warm if warm > 0 else float("inf")
    verdict = "met" if warm < WARM_TARGET_S and ratio >= RATIO_TARGET else "NOT met"
    print(f"target warm p50 < {WARM_TARGET_S} s and ratio >= {RATIO_TARGET:g}: {verdict}")
    print(f"cold_p50={cold:.3f} warm_p50={warm:.3f} ratio={ratio:.1f}")


if __name__ == "__main__":
    sys.exit(main())

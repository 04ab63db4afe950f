"""The warm pool against real Docker: a warm run behaves like a cold one, only sooner, in a container just
as locked down, used once. Runs go through the same runner the Celery task calls; the pool is this test
process's own, as it would be a worker process's."""

from __future__ import annotations

import textwrap
import time
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from sandbox import judging, reaper, runner, services
from sandbox.backends import warm_pool
from sandbox.backends.base import ExecutionLimits, ProgramSpec
from sandbox.harness.faultline_harness.protocol import READY_LINE as ZYGOTE_READY
from sandbox.models import Run
from tests.sandbox.cgroup_weight import READ_WEIGHT, as_seen_inside
from tests.sandbox.helpers import HANG, containers_of, in_background, log_of, start_worker, wait_for

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]
FILL_TIMEOUT = 180


def docker_client():
    import docker

    return docker.from_env()


def container_exists(container_id: str) -> bool:
    return bool(docker_client().containers.list(all=True, filters={"id": container_id}))


@pytest.fixture
def pool(settings):
    """This process's warm pool, full before the test starts; emptied afterwards."""
    from sandbox.images.tags import image_tag

    settings.SANDBOX_BACKEND = "docker"
    node = f"pooltest-{uuid.uuid4().hex[:8]}@test"
    started = warm_pool.WarmPool(node, {"cpu": 1}, image_tag("cpu"))
    warm_pool._pool = started
    started.start()
    assert started.wait_filled(FILL_TIMEOUT), "the pool did not fill"
    yield started
    warm_pool.stop_pool()


class NodeScopedDocker:
    """A docker client whose container listings only see one worker node's containers: the reaper
    under test must not touch containers of anything else sharing this engine."""

    def __init__(self, node: str) -> None:
        self._client = docker_client()
        self._node = node
        self.containers = self

    def list(self, all: bool = False, filters: dict | None = None, **options) -> list:
        filters = dict(filters or {})
        labels = filters.get("label", [])
        filters["label"] = [*([labels] if isinstance(labels, str) else labels), f"faultline.worker={self._node}"]
        return self._client.containers.list(all=all, filters=filters, **options)


def run_program(code: str, **options) -> Run:
    run = services.create_run(owner=None, files={"main.py": textwrap.dedent(code)}, enqueue=False, **options)
    runner.execute_run(run.pk)
    run.refresh_from_db()
    return run


def warm_run(pool: warm_pool.WarmPool, code: str, **options) -> Run:
    assert pool.wait_filled(FILL_TIMEOUT), "the pool did not refill"
    idle = {lease.container_id for lease in pool._idle["cpu"]}
    run = run_program(code, **options)
    assert run.container_id in idle, "the run did not take the pool's container"
    return run


SAME_PROGRAM = """
    import os, sys
    import torch
    from faultline_harness import report

    out = os.environ["FAULTLINE_OUTPUT_DIR"]
    with open(os.path.join(out, "weights.txt"), "w") as f:
        f.write(str(torch.arange(4).sum().item()))
    for step in range(3):
        report.step(step, loss=1.0 / (step + 1))
    print("hello from", os.environ["RANK"], "of", os.environ["WORLD_SIZE"])
    print("to stderr", file=sys.stderr)
    sys.exit(3)
"""
STABLE_KINDS = ("start", "metric", "counter", "rank_exit", "end")


def comparable(run: Run) -> dict:
    """What must not depend on warm or cold: timings, pids and ports aside."""
    events = [e for e in run.events.order_by("seq") if e.kind in STABLE_KINDS]
    shape = []
    for event in events:
        data = {k: v for k, v in event.data.items() if k not in ("t", "duration", "pids", "master_port")}
        data.pop("peak_rss_bytes", None)
        data.pop("peak_container_bytes", None)
        shape.append(data)
    artifacts = {a.name: bytes(a.content) for a in run.artifacts.all() if a.name != "harness/summary.json"}
    return {
        "status": run.status,
        "exit_code": run.exit_code,
        "exit_codes": run.exit_codes,
        "log": sorted(log_of(run).splitlines()),
        "events": shape,
        "artifacts": artifacts,
        "summary": "harness/summary.json" in {a.name for a in run.artifacts.all()},
    }


def test_warm_run_gives_what_a_cold_run_gives_only_sooner(settings, pool):
    assert pool.wait_filled(FILL_TIMEOUT), "the pool did not refill"
    started = time.monotonic()
    warm = warm_run(pool, SAME_PROGRAM)
    warm_seconds = time.monotonic() - started
    warm_pool._pool = None  # the same program again, cold
    try:
        started = time.monotonic()
        cold = run_program(SAME_PROGRAM)
        cold_seconds = time.monotonic() - started
    finally:
        warm_pool._pool = pool
    assert comparable(warm) == comparable(cold)
    assert warm.status == "failed" and warm.exit_code == 3 and warm.exit_codes == {"0": 3}
    assert "[r0] hello from 0 of 1" in log_of(warm) and "[r0] to stderr" in log_of(warm)
    assert "weights.txt" in {a.name for a in warm.artifacts.all()}
    # Cold: create and start a container, then import torch in the launcher and fork. Warm: none of that, so
    # from the worker's start to the end it is much sooner; the program itself runs the same in both.
    assert warm_seconds < cold_seconds / 2, (warm_seconds, cold_seconds)


def test_each_warm_run_gets_a_fresh_container_that_is_removed_after(pool):
    first = warm_run(pool, "import pathlib; pathlib.Path('/work/cwd/mark').write_text('x'); print('one')")
    assert first.status == "passed", log_of(first)
    assert not container_exists(first.container_id)
    second = warm_run(pool, "import os; print('two', os.path.exists('/work/cwd/mark'))")
    assert second.status == "passed", log_of(second)
    assert second.container_id != first.container_id
    assert "[r0] two False" in log_of(second)
    assert containers_of(second) == []


@pytest.mark.parametrize("priority", [Run.Priority.PRACTICE, Run.Priority.VALIDATION])
def test_a_warm_container_takes_the_cpu_weight_of_the_run_it_is_handed_to(pool, priority):
    """Made ahead of any run, a pool container weighs like background work; the run that takes it sets its
    own priority's weight before the program starts."""
    idle = docker_client().containers.get(pool._idle["cpu"][0].container_id)
    assert idle.attrs["HostConfig"]["CpuShares"] == warm_pool.POOL_CPU_WEIGHT < Run(priority=priority).cpu_weight + 1
    run = warm_run(pool, READ_WEIGHT, priority=priority)
    assert run.status == "passed", log_of(run)
    file, value = next(line.split()[1:3] for line in log_of(run).splitlines() if "cpu." in line)
    assert int(value) == as_seen_inside(Run(priority=priority).cpu_weight, file)


def test_the_pool_refills_only_once_a_judged_run_is_judged(pool):
    """A grader needs the cores the run had: a new container importing torch waits until it is done."""
    seen_while_judging = []

    def judge(run_id, result) -> bool:
        time.sleep(3)  # longer than a refill takes to begin
        seen_while_judging.append(len(pool._idle["cpu"]))
        return True

    judging.register_judge("pooltest", judge)
    try:
        run = warm_run(pool, "print('judged')", purpose="pooltest")
    finally:
        judging._judges.pop("pooltest", None)
    assert run.status == "passed", log_of(run)
    assert seen_while_judging == [0]
    assert pool.wait_filled(FILL_TIMEOUT), "the pool did not refill after the judging"


def test_warm_container_is_as_locked_down_as_a_cold_one(pool):
    from sandbox.backends.docker_backend import DockerSandbox

    idle_id = pool._idle["cpu"][0].container_id
    warm_attrs = docker_client().containers.get(idle_id).attrs
    box = DockerSandbox(ProgramSpec(files={"main.py": "print(1)"}), ExecutionLimits(), {"faultline.run": "0"})
    box.prepare()
    try:
        box._start_cold()
        box.container.reload()
        cold_attrs = box.container.attrs
    finally:
        box.kill()
        box.cleanup()
    keys = (
        "NetworkMode", "ReadonlyRootfs", "CapDrop", "CapAdd", "SecurityOpt", "Privileged", "Init", "PidsLimit",
        "Memory", "MemorySwap", "NanoCpus", "Ulimits", "Tmpfs", "LogConfig", "ShmSize", "DeviceRequests",
        "Devices", "IpcMode", "PidMode",
    )  # fmt: skip
    assert {k: warm_attrs["HostConfig"].get(k) for k in keys} == {k: cold_attrs["HostConfig"].get(k) for k in keys}
    assert warm_attrs["Config"]["User"] == cold_attrs["Config"]["User"] == "10001:10001"
    mounts = {m["Destination"]: m for m in warm_attrs["Mounts"]}
    assert set(mounts) == {"/lab/program", "/lab/control"}
    assert all(not m["RW"] for m in mounts.values())

    run = warm_run(
        pool,
        """
        import errno, os, socket
        print("uid", os.getuid(), "gid", os.getgid())
        print("docker socket", os.path.exists("/var/run/docker.sock"))
        try:
            socket.create_connection(("172.17.0.1", 80), timeout=2)
            print("network CONNECTED")
        except OSError as exc:
            print("network refused:", type(exc).__name__)
        print("interfaces:", sorted(os.listdir("/sys/class/net")))
        for path in ("/usr/planted", "/lab/control/job.json", "/lab/program/planted"):
            try:
                open(path, "w")
                print(path, "WRITABLE")
            except OSError as exc:
                print(path, errno.errorcode[exc.errno])
        with open("/proc/self/status") as f:
            caps = [l for l in f if l.startswith("CapEff") or l.startswith("NoNewPrivs")]
        print("caps", " ".join(c.split()[1] for c in caps))
    """,
    )
    text = log_of(run)
    assert run.status == "passed", text
    assert "uid 10001 gid 10001" in text and "docker socket False" in text
    assert "network refused" in text and "CONNECTED" not in text and "interfaces: ['lo']" in text
    assert "WRITABLE" not in text and text.count("EROFS") == 3
    assert "caps 0000000000000000 1" in text


def test_debug_toggles_reach_the_forked_ranks(pool):
    run = warm_run(
        pool,
        """
        import faulthandler, tracemalloc
        import torch, torch.distributed as dist
        print("anomaly", torch.is_anomaly_enabled())
        print("dist debug", dist.get_debug_level())
        print("tracemalloc", tracemalloc.is_tracing())
        print("faulthandler", faulthandler.is_enabled())
    """,
        env={"FAULTLINE_DETECT_ANOMALY": "1", "TORCH_DISTRIBUTED_DEBUG": "INFO", "FAULTLINE_TRACEMALLOC": "1"},
    )
    text = log_of(run)
    assert run.status == "passed", text
    assert "[r0] anomaly True" in text
    assert "[r0] dist debug DebugLevel.INFO" in text
    assert "[r0] tracemalloc True" in text
    assert "[r0] faulthandler True" in text


def test_two_forked_ranks_all_reduce_over_gloo(pool):
    run = warm_run(
        pool,
        """
        import numpy as np
        import torch, torch.distributed as dist
        dist.init_process_group("gloo")
        total = torch.ones(1) * (dist.get_rank() + 1)
        dist.all_reduce(total)
        print("sum", total.item(), "threads", torch.get_num_threads(), "draw", np.random.randint(1 << 30))
    """,
        ranks=2,
    )
    text = log_of(run)
    assert run.status == "passed", text
    assert "[r0] sum 3.0" in text and "[r1] sum 3.0" in text
    assert run.exit_codes == {"0": 0, "1": 0}
    draws = {line.split("draw ")[1] for line in text.splitlines() if "draw " in line}
    assert len(draws) == 2, "the ranks share the zygote's numpy random state"


def test_optimizer_steps_are_counted_in_forked_ranks(pool):
    run = warm_run(
        pool,
        """
        import torch
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.Adam(model.parameters())
        for _ in range(5):
            opt.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            opt.step()
    """,
    )
    assert run.status == "passed", log_of(run)
    counters = [e.data["value"] for e in run.events.filter(kind="counter").order_by("seq")]
    assert counters and counters[-1] == 5


def test_a_run_that_does_not_match_the_pool_runs_cold(pool):
    idle = {lease.container_id for lease in pool._idle["cpu"]}
    run = run_program("print('bigger')", memory_mb=2048)
    assert run.status == "passed", log_of(run)
    assert run.container_id not in idle
    assert {lease.container_id for lease in pool._idle["cpu"]} <= idle


def test_reaper_removes_pool_containers_of_dead_workers_and_processes(settings, monkeypatch):
    from sandbox.images.tags import image_tag

    settings.SANDBOX_BACKEND = "docker"
    node = f"gone-{uuid.uuid4().hex[:8]}@test"
    maker = warm_pool.WarmPool(node, {"cpu": 1}, image_tag("cpu"))
    profile = warm_pool.Profile.of(maker.image, ExecutionLimits())
    orphan = maker._create(profile)  # the worker's previous incarnation
    maker.pid = 2**22 + 1  # above pid_max: a process that cannot exist
    dead_process = maker._create(profile)
    maker.pid = 1
    monkeypatch.setattr(warm_pool, "MAX_AGE_SECONDS", -3600)
    expired = maker._create(profile)
    try:
        assert all(container_exists(lease.container_id) for lease in (orphan, dead_process, expired))
        report = reaper.reap(docker_client=NodeScopedDocker(node), this_worker=node)
        assert not container_exists(dead_process.container_id)
        assert not container_exists(expired.container_id)
        assert container_exists(orphan.container_id)  # alive maker, before its deadline: still in use
        later = timezone.now() + timedelta(seconds=2)
        reaper.reap(docker_client=NodeScopedDocker(node), restarted_worker=node, worker_started=later)
        assert not container_exists(orphan.container_id)
        assert len(report.containers_removed) >= 2
    finally:
        for lease in (orphan, dead_process, expired):
            maker._remove(lease)


def test_reaper_ends_a_run_whose_pool_container_outlived_its_worker(pool):
    run = services.create_run(owner=None, files={"main.py": "print(1)"}, enqueue=False)
    lease = pool.take(pool.image, runner.limits_for(run))
    assert lease is not None
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, container_id=lease.container_id, worker=pool.node,
        started_at=timezone.now() - timedelta(seconds=5), status_changed_at=timezone.now() - timedelta(seconds=5),
    )  # fmt: skip
    time.sleep(1.1)  # labels hold whole seconds
    report = reaper.reap(
        docker_client=NodeScopedDocker(pool.node), restarted_worker=pool.node, worker_started=timezone.now()
    )
    assert not container_exists(lease.container_id)
    assert run.pk in report.runs_failed
    assert Run.objects.get(pk=run.pk).status == Run.Status.ERROR
    pool.discard(lease)


def test_stack_dump_and_cancel_of_a_warm_run(pool):

    from sandbox.models import RunDiagnostic

    assert pool.wait_filled(FILL_TIMEOUT)
    run = services.create_run(owner=None, files={"main.py": HANG}, timeout_seconds=120, enqueue=False)
    thread = in_background(run)
    deadline = time.monotonic() + 60
    while "hanging now" not in log_of(run) and time.monotonic() < deadline:
        time.sleep(0.1)
    diagnostic = services.request_diagnostic(Run.objects.get(pk=run.pk), "stacks", None)
    deadline = time.monotonic() + 30
    while RunDiagnostic.objects.get(pk=diagnostic.pk).status != "done" and time.monotonic() < deadline:
        time.sleep(0.1)
    output = RunDiagnostic.objects.get(pk=diagnostic.pk).output
    assert "wait_forever" in output, output
    started = time.monotonic()
    services.cancel_run(Run.objects.get(pk=run.pk))
    thread.join(timeout=30)
    run.refresh_from_db()
    assert run.status == "cancelled" and time.monotonic() - started < 5
    assert run.container_id and not container_exists(run.container_id)


def test_settings_whose_zygote_cannot_start_are_not_retried(pool, monkeypatch):
    # With 128 MB the torch import is either killed or thrashes on evicted library pages, depending on
    # the disk; a stalled zygote must be given up like a dead one.
    monkeypatch.setattr(warm_pool, "READY_SECONDS", 30.0)
    run = run_program("print('small')", memory_mb=128)  # cold: no such container in the pool
    assert run.status == "passed", log_of(run)
    small = warm_pool.Profile.of(pool.image, runner.limits_for(run))
    deadline = time.monotonic() + FILL_TIMEOUT
    while small not in pool._broken and time.monotonic() < deadline:
        time.sleep(0.5)
    assert small in pool._broken, "a zygote with 128 MB should not become ready"
    time.sleep(3)
    made = docker_client().containers.list(all=True, filters={"label": f"faultline.worker={pool.node}"})
    assert len(made) <= 1, "the pool keeps making containers that die"


def test_a_zygote_not_ready_in_time_is_removed_and_its_settings_not_retried(monkeypatch):
    from sandbox.images.tags import image_tag

    monkeypatch.setattr(warm_pool, "READY_SECONDS", 0.3)  # importing torch alone takes seconds
    stalled = warm_pool.WarmPool(f"pooltest-{uuid.uuid4().hex[:8]}@test", {"cpu": 1}, image_tag("cpu"))
    default = warm_pool.Profile.of(stalled.image, ExecutionLimits())
    stalled.start()
    try:
        deadline = time.monotonic() + 60
        while default not in stalled._broken and time.monotonic() < deadline:
            time.sleep(0.2)
        assert default in stalled._broken
        assert not stalled.wait_filled(3)
        made = docker_client().containers.list(all=True, filters={"label": f"faultline.worker={stalled.node}"})
        assert made == [], "the stalled zygote's container is still there"
    finally:
        stalled.close()


@pytest.mark.worker
def test_a_killed_workers_warm_container_is_removed_when_it_restarts(settings, tmp_path):
    import signal

    from sandbox.tasks import execute_run

    settings.SANDBOX_BACKEND = "docker"
    node, queue = f"warmdead-{uuid.uuid4().hex[:8]}@test", f"warm-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    api = docker_client().api

    def ready_pool_containers() -> list[str]:
        found = api.containers(filters={"label": ["faultline.pool", f"faultline.worker={node}"]})
        ids = [c["Id"] for c in found]
        return [i for i in ids if ZYGOTE_READY.encode() in api.logs(i, stdout=True, stderr=False, tail=1)]

    worker = start_worker(node, log, queue=queue, pool_size=1)
    try:
        pooled = wait_for(ready_pool_containers, FILL_TIMEOUT, f"a ready pool container:\n{log.read_text()[-2000:]}")
        hang = "import time\nprint('hanging now', flush=True)\ntime.sleep(600)\n"
        run = services.create_run(owner=None, files={"main.py": hang}, timeout_seconds=300, enqueue=False)
        execute_run.apply_async(args=[run.pk], queue=queue)
        wait_for(lambda: "hanging now" in log_of(run), 120, f"the run to start:\n{log.read_text()[-2000:]}")
        run.refresh_from_db()
        assert run.container_id in pooled
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
        assert container_exists(run.container_id), "nothing reaps before a worker comes back"
        worker = start_worker(node, log, queue=queue, pool_size=0)  # the same worker, restarted
        wait_for(lambda: Run.objects.get(pk=run.pk).status == "error", 60, "the restarted worker to end the run")
        wait_for(lambda: not container_exists(run.container_id), 30, "the orphaned pool container to go")
        assert "platform fault" in Run.objects.get(pk=run.pk).error_message
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        for container in api.containers(all=True, filters={"label": f"faultline.worker={node}"}):
            api.remove_container(container["Id"], force=True)


def test_a_rank_forked_by_the_zygote_holds_no_way_into_the_launchers_stream(settings, pool):
    from tests.sandbox.test_forgery import FORGER

    run = warm_run(pool, FORGER.replace("MODE", "sys.exit(3)"), timeout_seconds=30)
    opened = next(line for line in log_of(run).splitlines() if "OPENED" in line)
    assert "/proc/1/" not in opened, opened
    assert run.status == "failed" and run.exit_codes == {"0": 3}
    ends = [e.data for e in run.events.filter(kind="end")]
    assert len(ends) == 1 and ends[0]["exit_code"] == 3

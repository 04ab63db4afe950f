"""The grader loads what a hostile program saved: it runs locked down, and what goes wrong is named clearly.

The container tests give the grader a checkpoint that carries pickled code, one that inflates
far past the grader's memory, output names that leave the output folder, and a grader that tries
the network, the file system, processes and the project's code. Nothing gets out, and each ends
as a candidate error (the run's output) or a platform fault (the grader), as it should.
"""

from __future__ import annotations

import collections
import io
import logging
import os
import pickle
import time
import uuid
import zipfile

import pytest
import torch

from labs import grader_sandbox
from labs.grader_api import CandidateOutputError, GradeContext, max_param_diff, r2, weights_finite
from labs.grader_sandbox import GRADER_MIN_MEMORY_BYTES, GraderFault, GraderJob, run_grader
from tests.sandbox.cgroup_weight import as_seen_inside

MIB = 1024 * 1024


def job(source: str, artifacts: dict[str, bytes] | None = None, **options) -> GraderJob:
    return GraderJob(
        source=source, filename="tests/grader.py", params={"lr": 0.1}, seed=123456789012, probe_seed=42, ranks=1,
        artifacts=artifacts or {}, **options,
    )  # fmt: skip


def docker_containers(**filters) -> list:
    import docker

    return docker.from_env().containers.list(all=True, filters=filters)


def saved(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


class RunsCode:
    """Unpickling this runs a shell command: what a hostile checkpoint would carry."""

    def __reduce__(self):
        return os.system, ("touch /work/pwned",)


def inflating_checkpoint(nbytes: int) -> bytes:
    """A valid torch checkpoint of one float tensor of ``nbytes``, deflated: ~1/1000 of that on disk."""
    numel = nbytes // 4
    storage = object()

    class Tensor:
        def __reduce__(self):
            return torch._utils._rebuild_tensor_v2, (storage, 0, (numel,), (1,), False, collections.OrderedDict())

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", numel) if obj is storage else None

    data = io.BytesIO()
    Pickler(data, protocol=2).dump({"w": Tensor()})
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(saved({"w": torch.zeros(1)}))) as source,
        zipfile.ZipFile(out, "w", compresslevel=1) as target,
    ):
        for info in source.infolist():
            if info.filename.endswith("/data.pkl"):
                target.writestr(info, data.getvalue())
            elif info.filename.endswith("/data/0"):
                entry = zipfile.ZipInfo(info.filename)
                entry.compress_type = zipfile.ZIP_DEFLATED
                with target.open(entry, "w", force_zip64=True) as sink:
                    for _ in range(nbytes // (4 * MIB)):
                        sink.write(bytes(4 * MIB))
            else:
                target.writestr(info, source.read(info.filename))
    return out.getvalue()


LOAD_GRADER = """
import os

def evaluate(ctx):
    try:
        return {"tensors": float(len(ctx.load("model.pt")))}
    finally:
        if os.path.exists("/work/pwned"):
            raise SystemExit("the checkpoint's code ran")
"""

PROBE_GRADER = """
import importlib.util, os, socket, threading

def blocked(action):
    try:
        action()
    except OSError:
        return 1.0
    return 0.0

def write(path):
    with open(path, "w") as fh:
        fh.write("x")

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return line.split()[1]

def thread_count():
    stop, started = threading.Event(), 0
    try:
        for _ in range(400):
            threading.Thread(target=stop.wait, daemon=True).start()
            started += 1
    except RuntimeError:
        pass
    stop.set()
    return float(started)

def memory_limit():
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):  # cgroup v2, v1
        if os.path.exists(path):
            return float(open(path).read().strip())
    return -1.0

def evaluate(ctx):
    import labs
    package = list(labs.__path__)[0]
    return {
        "net_outside_blocked": blocked(lambda: socket.create_connection(("1.1.1.1", 53), timeout=3)),
        "only_loopback": float(sorted(os.listdir("/sys/class/net")) == ["lo"]),
        "artifacts_read_only": blocked(lambda: write(os.path.join(ctx.artifacts, "model.pt"))),
        "package_read_only": blocked(lambda: write(os.path.join(package, "grader_api.py"))),
        "root_read_only": blocked(lambda: write("/etc/faultline-grader")),
        "opt_read_only": blocked(lambda: write("/opt/venv/evil.py")),
        "scratch_writable": 1.0 - blocked(lambda: write("/work/scratch.txt")),
        "uid": float(os.getuid()),
        "no_capabilities": float(int(status("CapEff"), 16) == 0),
        "no_new_privileges": float(status("NoNewPrivs") == "1"),
        "package_is_two_files": float(sorted(os.listdir(package)) == ["grader_api.py", "grader_main.py"]),
        "no_project_code": float(all(importlib.util.find_spec(m) is None for m in ("faultline", "django", "sandbox"))),
        "env_minimal": float(set(os.environ) <= {
            "PATH", "PYTHONPATH", "HOME", "LANG", "OMP_NUM_THREADS", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
            "HOSTNAME",
        }),
        "memory_max": memory_limit(),
        "threads": thread_count(),
        "seed_low": float(ctx.seed % 2**20),
        "probe_seed": float(ctx.probe_seed),
    }
"""


@pytest.mark.docker
def test_a_checkpoint_that_carries_code_is_refused_and_its_code_never_runs():
    answer = run_grader(job(LOAD_GRADER, {"model.pt": saved({"w": RunsCode()})}), {}, require_container=True)
    assert answer.metrics == {}
    assert answer.candidate_error.startswith("model.pt could not be loaded as weights")
    assert "unsupported GLOBAL posix.system" in answer.candidate_error  # the reason, not torch's boilerplate


@pytest.mark.docker
def test_a_checkpoint_that_inflates_past_the_memory_limit_is_the_outputs_fault():
    bomb = inflating_checkpoint(768 * MIB)
    assert len(bomb) < 2 * MIB  # passes any cap on the size of saved files
    answer = run_grader(job(LOAD_GRADER, {"model.pt": bomb}, memory_bytes=512 * MIB), {}, require_container=True)
    assert answer.metrics == {}
    assert "ran out of its 512 MiB of memory" in answer.candidate_error


@pytest.fixture
def standby():
    """This process's standby grader, waiting before the test grades; stopped afterwards."""
    grader_sandbox.start_standby(f"standbytest-{uuid.uuid4().hex[:8]}@test")
    slot = grader_sandbox._here()
    deadline = time.monotonic() + 120
    while slot.ready is None:
        assert time.monotonic() < deadline, "no standby grader started"
        time.sleep(0.1)
    yield slot
    grader_sandbox.stop_standby()


@pytest.mark.docker
@pytest.mark.parametrize("where", ["own container", "standby"])
def test_a_hostile_grader_is_contained(request, where):
    if where == "standby":
        slot = request.getfixturevalue("standby")
        used = slot.ready.container_id
    artifacts = {"model.pt": saved({"w": torch.ones(2)}), "../escape.pt": b"x", "/abs.pt": b"x"}
    memory = GRADER_MIN_MEMORY_BYTES if where == "standby" else 1024 * MIB  # a standby has the usual 2 GiB
    answer = run_grader(job(PROBE_GRADER, artifacts, memory_bytes=memory), {}, require_container=True)
    if where == "standby":
        assert slot.ready is None or slot.ready.container_id != used  # taken, never handed out again
        assert not docker_containers(id=used), "the standby grader was not removed after its grading"
    metrics = answer.metrics
    assert answer.candidate_error == "" and metrics, answer
    blocked = [
        "net_outside_blocked", "only_loopback", "artifacts_read_only", "package_read_only", "root_read_only",
        "opt_read_only", "no_capabilities", "no_new_privileges", "package_is_two_files", "no_project_code",
        "env_minimal",
    ]  # fmt: skip
    assert {name: metrics[name] for name in blocked} == dict.fromkeys(blocked, 1.0)
    assert metrics["scratch_writable"] == 1.0  # the probe can tell a write that works from one that fails
    assert metrics["uid"] == 10001
    assert metrics["memory_max"] == memory
    assert 0 < metrics["threads"] < 200  # pids limit: 128 tasks in the container
    assert metrics["seed_low"] == 123456789012 % 2**20 and metrics["probe_seed"] == 42


@pytest.mark.docker
def test_names_outside_the_output_folder_are_never_outputs():
    source = """
from labs.grader_api import CandidateOutputError

def evaluate(ctx):
    refused = 0
    for name in ("../request.json", "/etc/passwd", "../../grade/request.json", "escape.pt", "abs.pt"):
        try:
            ctx.path(name)
        except CandidateOutputError:
            refused += 1
    return {"refused": refused, "kept": len(list(ctx.artifacts.rglob("*")))}
"""
    artifacts = {"../escape.pt": b"x", "/abs.pt": b"x", "ok.pt": b"x"}
    answer = run_grader(job(source, artifacts), {}, require_container=True)
    assert answer.metrics == {"refused": 5.0, "kept": 1.0}


@pytest.mark.docker
def test_a_grader_past_its_time_limit_is_killed_from_outside():
    import docker

    marker = uuid.uuid4().hex
    source = "def evaluate(ctx):\n    while True:\n        pass\n"
    with pytest.raises(GraderFault, match="ran over 5 s"):
        run_grader(job(source, timeout_seconds=5), {"faultline.test": marker}, require_container=True)
    client = docker.from_env()
    assert client.containers.list(all=True, filters={"label": f"faultline.test={marker}"}) == []


@pytest.mark.docker
def test_a_grader_crash_is_a_platform_fault():
    with pytest.raises(GraderFault, match="crashed: RuntimeError: grader bug"):
        run_grader(job("def evaluate(ctx):\n    raise RuntimeError('grader bug')\n"), {}, require_container=True)


@pytest.mark.docker
def test_the_grader_reports_its_start_and_then_its_run_for_the_candidates_page():
    """The progress calls come in order, the second only once the grader's container is running."""
    seen = []
    source = "def evaluate(ctx):\n    return {'one': 1.0}\n"
    answer = run_grader(
        job(source), {}, require_container=True,
        on_start=lambda: seen.append("starting"), on_running=lambda: seen.append("running"),
    )  # fmt: skip
    assert seen == ["starting", "running"] and answer.metrics == {"one": 1.0}


@pytest.mark.docker
@pytest.mark.parametrize("shares", [128, 1024])
def test_the_grader_weighs_on_the_cpu_as_the_run_it_grades(shares):
    """Grading a validation run is background work too; grading a candidate's fix is not."""
    source = """
from pathlib import Path

def evaluate(ctx):
    v1, v2 = Path("/sys/fs/cgroup/cpu/cpu.shares"), Path("/sys/fs/cgroup/cpu.weight")
    found = v1 if v1.exists() else v2
    return {"value": float(found.read_text()), "v2": float(found == v2)}
"""
    answer = run_grader(job(source, cpu_weight=shares), {}, require_container=True)
    file = "cpu.weight" if answer.metrics["v2"] else "cpu.shares"
    assert answer.metrics["value"] == as_seen_inside(shares, file)


@pytest.mark.docker
def test_a_standby_grader_answers_once_then_the_next_one_waits(standby):
    first = standby.ready.container_id
    container = docker_containers(id=first)[0]
    assert container.labels["faultline.pool"] == "1" and container.attrs["HostConfig"]["CpuShares"] == 128
    answer = run_grader(job("def evaluate(ctx):\n    return {'seed': ctx.seed % 1000}\n"), {}, require_container=True)
    assert answer.metrics == {"seed": 123456789012 % 1000}
    assert not docker_containers(id=first)
    deadline = time.monotonic() + 120
    while standby.ready is None:
        assert time.monotonic() < deadline, "no new standby after the grading"
        time.sleep(0.1)
    assert standby.ready.container_id != first
    # A lab that asks for more memory than the standby has gets a container of its own; the standby waits on.
    waiting = standby.ready.container_id
    answer = run_grader(job("def evaluate(ctx):\n    return {'one': 1}\n", memory_bytes=3 * 1024 * MIB), {},
                        require_container=True)  # fmt: skip
    assert answer.metrics == {"one": 1.0} and standby.ready.container_id == waiting


@pytest.mark.docker
def test_a_standby_left_idle_leaves_by_itself(monkeypatch):
    monkeypatch.setattr(grader_sandbox, "STANDBY_IDLE_SECONDS", 2)
    grader_sandbox.start_standby(f"standbytest-{uuid.uuid4().hex[:8]}@test")
    try:
        slot = grader_sandbox._here()
        deadline = time.monotonic() + 120
        while slot.ready is None:
            assert time.monotonic() < deadline, "no standby grader started"
            time.sleep(0.1)
        idle = slot.ready.container_id
        deadline = time.monotonic() + 60
        while docker_containers(id=idle, status="running"):
            assert time.monotonic() < deadline, "the idle standby did not leave"
            time.sleep(0.5)
        # The next grading finds it gone and grades in a container of its own.
        answer = run_grader(job("def evaluate(ctx):\n    return {'one': 1}\n"), {}, require_container=True)
        assert answer.metrics == {"one": 1.0}
        assert not docker_containers(id=idle)
        deadline = time.monotonic() + 120
        while slot.ready is None or slot.ready.container_id == idle:
            assert time.monotonic() < deadline, "no new standby after the idle one left"
            time.sleep(0.1)
    finally:
        grader_sandbox.stop_standby()


def test_without_docker_a_sandboxed_runs_grader_fails_and_others_fall_back_with_a_warning(monkeypatch, caplog):
    monkeypatch.setattr(grader_sandbox, "grader_engine", lambda: (None, "no Docker engine answers"))
    with pytest.raises(GraderFault, match="no Docker engine answers, and the grader of a sandboxed run"):
        run_grader(job(LOAD_GRADER), {}, require_container=True)
    with caplog.at_level(logging.WARNING, logger="labs.grader_sandbox"):
        answer = run_grader(job(LOAD_GRADER, {"model.pt": saved({"w": RunsCode()})}), {}, require_container=False)
    assert "NOT sandboxed" in caplog.text
    assert answer.candidate_error.startswith("model.pt could not be loaded as weights")  # weights_only still holds
    answer = run_grader(job(LOAD_GRADER, {"model.pt": saved({"a": torch.ones(1), "b": torch.ones(2)})}), {},
                        require_container=False)  # fmt: skip
    assert answer.metrics == {"tensors": 2.0}


def test_context_refuses_links_and_loads_state_dicts_strictly(tmp_path):
    (tmp_path / "model.pt").write_bytes(saved(torch.nn.Linear(2, 1).state_dict()))
    (tmp_path / "link.pt").symlink_to(tmp_path / "model.pt")
    (tmp_path / "wrong.pt").write_bytes(saved(torch.nn.Linear(3, 1).state_dict()))
    (tmp_path / "tensor.pt").write_bytes(saved(torch.ones(3)))
    ctx = GradeContext(tmp_path, {}, seed=1, ranks=1, probe_seed=2)
    with pytest.raises(CandidateOutputError, match="did not save link.pt"):
        ctx.path("link.pt")
    module = ctx.load_into(torch.nn.Linear(2, 1), "model.pt")
    assert isinstance(module, torch.nn.Linear)
    with pytest.raises(CandidateOutputError, match=r"wrong.pt does not fit the lab's Linear: .*size mismatch"):
        ctx.load_into(torch.nn.Linear(2, 1), "wrong.pt")
    with pytest.raises(CandidateOutputError, match="tensor.pt is not a state_dict of tensors"):
        ctx.load_into(torch.nn.Linear(2, 1), "tensor.pt")
    with pytest.raises(CandidateOutputError, match="did not save missing.pt"):
        ctx.load_into(torch.nn.Linear(2, 1), "missing.pt")


def test_half_precision_weights_under_a_wrapper_load_as_floats(tmp_path):
    module = torch.nn.Linear(2, 1)
    (tmp_path / "model.pt").write_bytes(saved({f"body.{k}": v.half() for k, v in module.state_dict().items()}))
    ctx = GradeContext(tmp_path, {}, seed=1, ranks=1)
    loaded = ctx.load_into(torch.nn.Linear(2, 1), "model.pt", dtype=torch.float32, strip_prefix="body.")
    assert loaded.weight.dtype == torch.float32
    assert torch.allclose(loaded.weight, module.weight.half().float())
    with pytest.raises(CandidateOutputError, match="does not fit the lab's Linear: .*Missing key"):
        ctx.load_into(torch.nn.Linear(2, 1), "model.pt")  # without the prefix stripped, no key matches


def test_shared_grader_measures():
    y = torch.linspace(-1.0, 1.0, 50)
    assert r2(y, y) == 1.0
    assert r2(torch.zeros(50), y) == pytest.approx(1 - 49 / 50, abs=1e-6)  # predicting the mean explains nothing
    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 1), torch.nn.Linear(3, 1)
    b.load_state_dict(a.state_dict())
    assert max_param_diff([a, b]) == 0.0
    with torch.no_grad():
        b.bias += 0.25
    assert max_param_diff([a, b]) == pytest.approx(0.25)
    assert weights_finite(a)
    with torch.no_grad():
        a.weight[0, 0] = float("nan")
    assert not weights_finite(a)

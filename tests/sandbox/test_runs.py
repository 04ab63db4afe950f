"""Run lifecycle rules that need no sandbox: state changes, delivery cap, input checks, caps, reaper, API."""

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from sandbox import runner, services
from sandbox.models import Run, RunEvent, RunLogChunk
from sandbox.reaper import reap

pytestmark = pytest.mark.django_db

PROGRAM = {"main.py": "print('hello')\n"}
MIB = 1024 * 1024


def make_run(**fields) -> Run:
    return Run.objects.create(files=PROGRAM, **fields)


def test_transition_is_conditional():
    run = make_run()
    assert Run.transition(run.pk, [Run.Status.QUEUED], Run.Status.STARTING)
    assert not Run.transition(run.pk, [Run.Status.QUEUED], Run.Status.STARTING), "second claim must lose"
    assert Run.transition(run.pk, [Run.Status.STARTING], Run.Status.ERROR, error_message="x")
    run.refresh_from_db()
    assert run.status == "error" and run.finished_at is not None


def test_redelivered_task_does_not_start_a_second_sandbox(settings):
    run = make_run(status=Run.Status.RUNNING)
    with mock.patch("sandbox.runner.open_sandbox") as open_sandbox:
        assert runner.execute_run(run.pk) == "skipped"
    open_sandbox.assert_not_called()
    run.refresh_from_db()
    assert run.status == "running" and run.deliveries == 1


def test_deliveries_are_capped():
    run = make_run(status=Run.Status.RUNNING, deliveries=runner.MAX_DELIVERIES)
    assert runner.execute_run(run.pk) == "error"
    run.refresh_from_db()
    assert run.status == "error" and "delivered 4 times" in run.error_message


def test_gpu_lab_on_a_cpu_worker_fails_fast_as_platform_error(settings):
    settings.SANDBOX_BACKEND = "process"
    settings.SANDBOX_GPUS = 0
    run = make_run(gpu=Run.Gpu.REQUIRED, queue=Run.Queue.GPU)
    assert runner.execute_run(run.pk) == "error"
    run.refresh_from_db()
    assert "needs a GPU" in run.error_message


def test_one_run_per_gpu_and_optional_gpu_labs_fall_back_to_cpu(settings):
    """With one GPU held by a running lab, a GPU-only lab fails fast and an optional one runs on the CPU."""
    from sandbox.gpuslots import claim_gpu

    settings.SANDBOX_BACKEND = "process"
    settings.SANDBOX_GPUS = 1
    seen = []
    real_execute = runner._execute

    def spy(run, backend, hostname, gpu_index=None):
        seen.append((run.gpu, gpu_index))
        return real_execute(run, backend, hostname, gpu_index)

    with mock.patch.object(runner, "_execute", spy), claim_gpu(1, settings.VAR_DIR / "gpu-slots") as held:
        assert held == 0
        required = make_run(gpu=Run.Gpu.REQUIRED, queue=Run.Queue.GPU)
        assert runner.execute_run(required.pk) == "error"
        required.refresh_from_db()
        assert "all 1 of its GPUs are busy" in required.error_message
        optional = make_run(gpu=Run.Gpu.OPTIONAL)
        assert runner.execute_run(optional.pk) == "passed"
    assert seen == [(Run.Gpu.OPTIONAL, None)]
    with mock.patch.object(runner, "_execute", spy), mock.patch("sandbox.runner.open_sandbox") as sandbox:
        sandbox.side_effect = runner.SandboxError("stop after the claim")
        runner.execute_run(make_run(gpu=Run.Gpu.OPTIONAL).pk)
    assert seen[-1] == (Run.Gpu.OPTIONAL, 0)  # the GPU is free again once its run has ended
    assert runner.limits_for(make_run(gpu=Run.Gpu.OPTIONAL), 0).gpu_index == 0


def test_a_process_run_sees_only_the_gpu_it_holds(settings):
    """On the process backend a run without a GPU slot sees no GPU, and one with a slot sees that GPU only;
    a run holding a GPU gets the CUDA runtime's host memory on top of its own limit."""
    from tests.sandbox.helpers import log_of

    settings.SANDBOX_BACKEND = "process"
    settings.SANDBOX_GPUS = 1
    settings.SANDBOX_GPU_HOST_MEMORY_MB = 2048
    program = {"main.py": "import os\nprint('visible=[' + os.environ['CUDA_VISIBLE_DEVICES'] + ']')\n"}
    without = Run.objects.create(files=program, gpu=Run.Gpu.NONE)
    assert runner.execute_run(without.pk) == "passed"
    assert "visible=[]" in log_of(without)
    holding = Run.objects.create(files=program, gpu=Run.Gpu.OPTIONAL)
    assert runner.execute_run(holding.pk) == "passed"
    assert "visible=[0]" in log_of(holding)
    assert runner.limits_for(holding, 0).memory_bytes == (holding.memory_mb + 2048) * 2**20
    assert runner.limits_for(holding, None).memory_bytes == holding.memory_mb * 2**20


@pytest.mark.parametrize(
    "files,message",
    [
        ({}, "at least one file"),
        ({"../evil.py": "x"}, "'..' is not allowed"),
        ({"/etc/passwd": "x"}, "not an absolute path"),
        ({"a.py": "x" * 300_000}, "over the 262144-byte limit"),
        ({f"f{i}.py": "x" for i in range(21)}, "at most 20 files"),
        ({"bin.py": "a\x00b"}, "must be text"),
    ],
)
def test_bad_program_files_are_rejected(files, message):
    with pytest.raises(services.RunRejected, match=message):
        services.create_run(owner=None, files=files)
    assert not Run.objects.exists()


def test_create_enqueues_after_commit(django_capture_on_commit_callbacks):
    with mock.patch("sandbox.tasks.execute_run.apply_async") as apply_async:
        with django_capture_on_commit_callbacks(execute=True):
            run = services.create_run(owner=None, files=PROGRAM)
            apply_async.assert_not_called()  # not before the row is committed
    apply_async.assert_called_once_with(args=[run.pk], queue="cpu")


def test_cancel_queued_is_immediate_and_running_is_flagged():
    queued = make_run()
    assert services.cancel_run(queued)
    queued.refresh_from_db()
    assert queued.status == "cancelled"
    running = make_run(status=Run.Status.RUNNING)
    services.cancel_run(running)
    running.refresh_from_db()
    assert running.status == "running" and running.cancel_requested


def test_log_is_capped_with_a_visible_marker_and_telemetry_still_flows():
    run = make_run()
    state = runner.StreamState(run_id=run.pk)
    line = "x" * 1023
    for i in range(3000):  # ~3 MB of output
        state.add_line(line)
        if i % 100 == 0:
            state.add_line('@@fl {"kind": "memory", "rank": 0, "t": 1.0, "rss_bytes": 1000}')
    state.flush()
    text = "".join(RunLogChunk.objects.filter(run=run).values_list("text", flat=True))
    assert len(text.encode()) <= runner.LOG_CAP_BYTES + len(runner.TRUNCATION_MARKER) + 1
    assert text.endswith(runner.TRUNCATION_MARKER)
    run.refresh_from_db()
    assert run.log_truncated and run.log_bytes > 3_000_000
    assert RunEvent.objects.filter(run=run, kind="memory").count() == 30


def test_malformed_telemetry_is_ignored():
    run = make_run()
    state = runner.StreamState(run_id=run.pk)
    for bad in ("@@fl not json", "@@fl [1, 2]", '@@fl {"kind": "metric", "rank": "zero"}'):
        state.add_line(bad)
    state.flush()
    assert list(RunEvent.objects.filter(run=run).values_list("kind", "rank")) == [("metric", None)]


def test_reaper_ends_runs_left_by_a_dead_worker():
    long_ago = timezone.now() - timedelta(minutes=30)
    lost = make_run(status=Run.Status.RUNNING, started_at=long_ago, timeout_seconds=60)
    fresh = make_run(status=Run.Status.RUNNING, started_at=timezone.now(), timeout_seconds=60)
    report = reap(docker_client=mock.Mock(containers=mock.Mock(list=mock.Mock(return_value=[]))))
    assert report.runs_failed == [lost.pk]
    lost.refresh_from_db()
    fresh.refresh_from_db()
    assert lost.status == "error" and "platform fault" in lost.error_message
    assert fresh.status == "running"


def test_reaper_gives_grading_its_own_time():
    ended_at_deadline = timezone.now() - timedelta(seconds=90)
    grading = make_run(
        status=Run.Status.GRADING, started_at=ended_at_deadline - timedelta(seconds=60), timeout_seconds=60,
        status_changed_at=timezone.now() - timedelta(seconds=30),
    )  # fmt: skip
    # Past the grader's allowance, within one more run of its length (a judge may run a reference first).
    measuring_reference = make_run(
        status=Run.Status.GRADING, started_at=timezone.now() - timedelta(seconds=300), timeout_seconds=60,
        status_changed_at=timezone.now() - timedelta(seconds=220),
    )  # fmt: skip
    stuck = make_run(
        status=Run.Status.GRADING, started_at=timezone.now() - timedelta(minutes=20), timeout_seconds=60,
        status_changed_at=timezone.now() - timedelta(minutes=10),
    )  # fmt: skip
    report = reap(docker_client=mock.Mock(containers=mock.Mock(list=mock.Mock(return_value=[]))))
    assert report.runs_failed == [stuck.pk]
    for run in (grading, measuring_reference):
        run.refresh_from_db()
        assert run.status == "grading"


def test_runs_api_is_for_authors_and_validates(login, candidate, author):
    assert (
        login(candidate).post("/api/sandbox/runs/", {"files": PROGRAM}, content_type="application/json").status_code
        == 403
    )
    client = login(author)
    with mock.patch("sandbox.services.enqueue_run"):
        bad = client.post("/api/sandbox/runs/", {"files": {"../x.py": "1"}}, content_type="application/json")
        assert bad.status_code == 400 and "'..' is not allowed" in str(bad.json()["error"]["fields"])
        toggles = client.post(
            "/api/sandbox/runs/", {"files": PROGRAM, "env": {"LD_PRELOAD": "x"}}, content_type="application/json"
        )
        assert toggles.status_code == 400 and "unknown toggles" in str(toggles.json()["error"]["fields"])
        created = client.post(
            "/api/sandbox/runs/",
            {"files": PROGRAM, "env": {"FAULTLINE_DETECT_ANOMALY": "1"}},
            content_type="application/json",
        )
    assert created.status_code == 201, created.json()
    run_id = created.json()["id"]
    RunLogChunk.objects.create(run_id=run_id, seq=1, text="a\n")
    RunLogChunk.objects.create(run_id=run_id, seq=2, text="b\n")
    body = client.get(f"/api/sandbox/runs/{run_id}/", {"log_after": 1}).json()
    assert body["status"] == "queued" and body["log"] == [{"seq": 2, "text": "b\n"}]
    assert client.post(f"/api/sandbox/runs/{run_id}/cancel/").json()["status"] == "cancelled"


def test_an_author_pauses_steps_and_resumes_a_run_through_the_api(login, author):
    client = login(author)
    with mock.patch("sandbox.services.enqueue_run"):
        bad = client.post(
            "/api/sandbox/runs/", {"files": PROGRAM, "pause": {"memory_mib": "lots"}}, content_type="application/json"
        )
        assert bad.status_code == 400 and "pause.memory_mib" in bad.json()["error"]["fields"]["pause"][0]
        created = client.post(
            "/api/sandbox/runs/", {"files": PROGRAM, "pause": {"at_step": 5}}, content_type="application/json"
        )
    run_id = created.json()["id"]
    assert created.json()["control"] == {"at_step": 5}
    for action in ("pause", "step", "resume"):
        assert client.post(f"/api/sandbox/runs/{run_id}/{action}/").status_code == 202
    body = client.get(f"/api/sandbox/runs/{run_id}/").json()
    assert body["control"] == {"at_step": 5, "now": 1, "release": 2, "step": False} and body["paused"] is None
    client.post(f"/api/sandbox/runs/{run_id}/cancel/")
    refused = client.post(f"/api/sandbox/runs/{run_id}/resume/")
    assert refused.status_code == 400 and "not running any more" in refused.json()["error"]["fields"]["action"][0]
    assert client.post(f"/api/sandbox/runs/{run_id}/rewind/").status_code == 404


def test_runs_are_private_to_their_owner(login, author):
    from core.roles import Role
    from tests.conftest import make_user

    run = make_run(owner=author)
    other = make_user("other-author", Role.AUTHOR)
    assert login(other).get(f"/api/sandbox/runs/{run.pk}/").status_code == 404
    assert login(author).get(f"/api/sandbox/runs/{run.pk}/").status_code == 200


def test_store_counts_come_from_the_launchers_end_event_only():
    run = make_run()
    state = runner.StreamState(run_id=run.pk)
    # A rank's forged end is printed as text by the launcher ("[r0] ..."), so it never decodes as an event.
    state.add_line('[r0] @@fl {"kind":"end","services":{"record_store":{"reads":99999,"records":2048}}}')
    state.add_line('@@fl {"kind":"end","t":1.0,"exit_code":0,"exit_codes":{"0":0},"duration":1.0,'
                   '"services":{"record_store":{"reads":12,"records":3}}}')  # fmt: skip
    execution = mock.Mock(exit_code=0, oom_killed=False, duration=1.0, artifacts_skipped=[])
    watcher = mock.Mock(timed_out=False, cancelled=False)
    assert state.result(execution, watcher).service_counts == {"record_store": {"reads": 12, "records": 3}}
    without = runner.StreamState(run_id=run.pk)
    without.add_line('@@fl {"kind":"end","t":1.0,"exit_code":0,"exit_codes":{"0":0},"duration":1.0}')
    assert without.result(execution, watcher).service_counts == {}


def test_memory_judged_leaves_out_the_launchers_own_and_cpu_comes_from_the_same_samples():
    run = make_run()
    state = runner.StreamState(run_id=run.pk)
    for t, anon, launcher, cpu in ((0.5, 300, 20, 4.0), (1.0, 360, 80, 4.6)):
        state.add_line(
            f'@@fl {{"kind":"container_memory","t":{t},"anon_bytes":{anon * MIB},"shmem_bytes":{8 * MIB},'
            f'"usage_bytes":{anon * MIB},"cpu_seconds":{cpu},"launcher_anon_bytes":{launcher * MIB}}}'
        )
    # A rank cannot add to either series: its lines arrive prefixed, as text.
    state.add_line('[r0] @@fl {"kind":"container_memory","t":1.2,"anon_bytes":1,"cpu_seconds":999}')
    execution = mock.Mock(exit_code=0, oom_killed=False, duration=1.0, artifacts_skipped=[])
    result = state.result(execution, mock.Mock(timed_out=False, cancelled=False))
    # The launcher's records for the ranks grew 60 MiB; the program's memory did not.
    assert result.memory == [(0.5, 288 * MIB), (1.0, 288 * MIB)]
    assert result.cpu == [(0.5, 4.0), (1.0, 4.6)] and result.memory_source == "container"

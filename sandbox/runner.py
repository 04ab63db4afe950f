"""Execute one run: the plain function behind the ``sandbox.execute_run`` task.

The worker owns the deadline (it kills the container itself; Celery's limits sit
above as a backstop), streams log text and telemetry to the database in small
increments with hard caps, answers diagnostic requests and cancels while the
program runs, and always ends the run in a terminal state. A failure of the
platform ends it as ``error``, which is never counted against a candidate.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from core.errortext import first_line
from sandbox import dispatch, pausing
from sandbox.backends import ExecutionLimits, ProgramSpec, SandboxError, open_sandbox, warm_pool
from sandbox.gpuslots import claim_gpu
from sandbox.harness.faultline_harness import protocol
from sandbox.instance import INSTANCE_LABEL, instance_id
from sandbox.judging import RunResult, TreeSamples, judge_for
from sandbox.memtrim import release_free_memory
from sandbox.models import Run, RunArtifact, RunDiagnostic, RunEvent, RunLogChunk
from sandbox.selection import choose_backend

log = logging.getLogger(__name__)

LOG_CAP_BYTES = 2 * 1024 * 1024
EVENT_CAP = 20_000
FLUSH_SECONDS = 0.5
FLUSH_BYTES = 64 * 1024
MAX_DELIVERIES = 3
TRUNCATION_MARKER = "\n[output truncated: the log of a run is capped at 2 MB]\n"
POSTMORTEM_CAP = 64  # captures kept per run (one of each kind per rank is what a rank sends)
POSTMORTEM_NOTES = {
    protocol.POSTMORTEM_NONFINITE: "Captured automatically inside the program at its first non-finite loss "
    "(reported by the program: display only, never used for grading).",
    protocol.POSTMORTEM_MEMORY_AT_EXIT: "Captured automatically inside the program as it exited "
    "(reported by the program: display only, never used for grading).",
}
POSTMORTEM_DIAGNOSTIC_KINDS = {
    protocol.POSTMORTEM_NONFINITE: "nonfinite",
    protocol.POSTMORTEM_MEMORY_AT_EXIT: RunDiagnostic.Kind.MEMORY,
}


@dataclass
class StreamState:
    """Output of a run on its way to the database: bounded, whatever the program prints."""

    run_id: int
    log_seq: int = 0
    event_seq: int = 0
    log_bytes: int = 0
    log_truncated: bool = False
    events_truncated: bool = False
    pending_text: list[str] = field(default_factory=list)
    pending_bytes: int = 0
    pending_events: list[RunEvent] = field(default_factory=list)
    peak_rss: int = 0
    ended_at: datetime | None = None  # when the output ended
    # The launcher's measurements, kept here whatever the event cap: a program that floods its own
    # reports must not push the launcher's samples out of what the run is judged on.
    end: dict | None = None
    rank_exits: dict[str, int | None] = field(default_factory=dict)
    container_memory: list[tuple[float, int]] = field(default_factory=list)
    container_cpu: list[tuple[float, float]] = field(default_factory=list)
    tree: TreeSamples = field(default_factory=TreeSamples)
    # The rank's own post-mortem captures: kept apart from the event stream (and its cap) because they
    # become tool output, not chart points.
    postmortems: list[dict] = field(default_factory=list)
    pause_clock: pausing.PauseClock | None = None
    postmortems_recorded: int = 0

    def add_line(self, line: str) -> None:
        event = protocol.decode(line)
        if event is not None:
            self._add_event(event)
            return
        size = len(line.encode("utf-8", errors="replace")) + 1
        self.log_bytes += size
        if self.log_truncated:
            return
        if self.log_bytes > LOG_CAP_BYTES:
            self.log_truncated = True
            self.pending_text.append(TRUNCATION_MARKER)
            return
        self.pending_text.append(line + "\n")
        self.pending_bytes += size

    def _add_event(self, data: dict) -> None:
        if protocol.is_measurement(data):
            self._measure(data)
        elif data.get("kind") == protocol.POSTMORTEM:
            if len(self.postmortems) < POSTMORTEM_CAP and data.get("what") in POSTMORTEM_NOTES:
                self.postmortems.append(data)
            return
        if self.pause_clock is not None:
            self.pause_clock.observe(data)
        if self.event_seq >= EVENT_CAP:
            self.events_truncated = True
            return
        self.event_seq += 1
        rank = data.get("rank")
        self.pending_events.append(
            RunEvent(
                run_id=self.run_id,
                seq=self.event_seq,
                kind=str(data.get("kind", "?"))[:20],
                rank=rank if isinstance(rank, int) else None,
                t=float(data.get("t") or 0.0),
                data=data,
            )
        )

    def _measure(self, data: dict) -> None:
        kind, t = data["kind"], _number(data.get("t"))
        if kind == protocol.END:
            self.end = data
        elif kind == protocol.RANK_EXIT and isinstance(data.get("rank"), int):
            code = data.get("exit_code")
            self.rank_exits[str(data["rank"])] = code if isinstance(code, int) else None
        elif kind == protocol.CONTAINER_MEMORY:
            size = _int(data.get("anon_bytes")) + _int(data.get("shmem_bytes")) - _int(data.get("launcher_anon_bytes"))
            if size > 0:
                self.container_memory.append((t, size))
            if _is_number(data.get("cpu_seconds")):
                self.container_cpu.append((t, float(data["cpu_seconds"])))
        elif kind == protocol.MEMORY and isinstance(data.get("rank"), int):
            self.peak_rss = max(self.peak_rss, _int(data.get("rss_bytes")))
            self.tree.add(data["rank"], t, data)

    def result(self, execution, watcher: _Watcher) -> RunResult:
        """The run as measured outside the program: the launcher's end event, the runtime, the worker."""
        end = self.end or {}
        codes = end.get("exit_codes")
        exit_codes = dict(codes) if isinstance(codes, dict) else dict(self.rank_exits)
        duration = end.get("duration")
        if self.container_memory:
            memory, cpu, source = self.container_memory, self.container_cpu, "container"
        else:
            memory, cpu, source = self.tree.memory, self.tree.cpu, "process-tree"
        peak = _int(end.get("peak_container_bytes")) or self.peak_rss or None
        return RunResult(
            exit_code=execution.exit_code,
            exit_codes={str(k): v if isinstance(v, int) else None for k, v in exit_codes.items()},
            timed_out=watcher.timed_out,
            oom_killed=execution.oom_killed,
            cancelled=watcher.cancelled,
            duration=float(duration) if _is_number(duration) else round(execution.duration, 3),
            memory=list(memory),
            cpu=list(cpu),
            memory_source=source if memory else "",
            peak_memory_bytes=peak,
            output_full=end.get("output_full") is True,
            artifacts_skipped=list(execution.artifacts_skipped),
            service_counts=_service_counts(end.get("services")),
        )

    def due(self, last_flush: float) -> bool:
        return bool(self.pending_text or self.pending_events or self._new_postmortems()) and (
            self.pending_bytes >= FLUSH_BYTES or time.monotonic() - last_flush >= FLUSH_SECONDS
        )

    def _new_postmortems(self) -> bool:
        return len(self.postmortems) != self.postmortems_recorded

    def flush(self) -> None:
        if self._new_postmortems():
            record_postmortems(self.run_id, self.postmortems, live_only=True)
            self.postmortems_recorded = len(self.postmortems)
        if self.pending_text:
            self.log_seq += 1
            RunLogChunk.objects.create(run_id=self.run_id, seq=self.log_seq, text="".join(self.pending_text))
            self.pending_text, self.pending_bytes = [], 0
        if self.pending_events:
            RunEvent.objects.bulk_create(self.pending_events)
            self.pending_events = []
        Run.objects.filter(pk=self.run_id).update(
            log_bytes=self.log_bytes, log_truncated=self.log_truncated, events_truncated=self.events_truncated
        )


def _service_counts(services) -> dict[str, dict[str, int]]:
    if not isinstance(services, dict):
        return {}
    return {
        str(name): {str(key): _int(value) for key, value in entry.items()}
        for name, entry in services.items()
        if isinstance(entry, dict)
    }


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value) -> float:
    return float(value) if _is_number(value) else 0.0


def limits_for(run: Run, gpu_index: int | None = None) -> ExecutionLimits:
    return ExecutionLimits(
        timeout_seconds=run.timeout_seconds,
        memory_bytes=(run.memory_mb + (settings.SANDBOX_GPU_HOST_MEMORY_MB if gpu_index is not None else 0)) * 2**20,
        cpus=run.cpus,
        gpu=gpu_index is not None,
        gpu_index=gpu_index,
        cpu_weight=run.cpu_weight,
    )


def execute_run(run_id: int, worker_name: str | None = None) -> str:
    """Run it once; returns the final status (or 'skipped' when another delivery owns it).

    ``worker_name`` is the Celery node name (unique per worker, stable across its restarts);
    runs and containers are labelled with it so a restarted worker can clean up after itself.
    """
    deliveries = Run.count_delivery(run_id)
    hostname = worker_name or socket.gethostname()
    if deliveries > MAX_DELIVERIES:
        Run.transition(
            run_id, Run.ACTIVE, Run.Status.ERROR,
            error_message=f"the task was delivered {deliveries} times without finishing; giving up (platform fault)",
        )  # fmt: skip
        return "error"
    if not Run.transition(run_id, [Run.Status.QUEUED], Run.Status.STARTING, worker=hostname):
        # Cancelled while queued, or a redelivery of a run another delivery already claimed:
        # never start a second container for it.
        return "skipped"
    return run_claimed(run_id, hostname)


def execute_next(queue: str, worker_name: str | None = None) -> str:
    """What a worker slot does with a delivered task: start the fairest queued run of ``queue`` that may
    start now (``sandbox.dispatch``), run it, then wake the queue for whatever still waits. 'idle' when no
    queued run may start (each is taken, or its owner is at the cap)."""
    hostname = worker_name or socket.gethostname()
    for run_id, owner_id in dispatch.fair_queue(queue):
        if dispatch.claim(run_id, owner_id, hostname):
            try:
                return run_claimed(run_id, hostname)
            finally:
                if dispatch.has_waiting(queue):
                    dispatch.wake(queue)
    return "idle"


def run_claimed(run_id: int, hostname: str) -> str:
    """Run a run this worker has just moved to ``starting``, to its end."""
    run = Run.objects.get(pk=run_id)
    choice = choose_backend()
    if not choice.ok:
        Run.transition(run_id, [Run.Status.STARTING], Run.Status.ERROR, error_message=choice.detail)
        return "error"
    # A run that wants a GPU gets one of this worker's GPUs to itself, or none: an optional-GPU lab
    # then runs on the CPU, a GPU-only lab fails fast as a platform fault.
    gpus = settings.SANDBOX_GPUS if run.gpu != Run.Gpu.NONE else 0
    try:
        with claim_gpu(gpus, Path(settings.VAR_DIR) / "gpu-slots") as gpu_index:
            if run.gpu == Run.Gpu.REQUIRED and gpu_index is None:
                detail = f"all {gpus} of its GPUs are busy" if gpus else "it has no GPU"
                Run.transition(
                    run_id, [Run.Status.STARTING], Run.Status.ERROR,
                    error_message=f"this lab needs a GPU and {detail} (platform fault; retry later)",
                )  # fmt: skip
                return "error"
            return _execute(run, choice.name, hostname, gpu_index)
    except SandboxError as exc:
        log.warning("run %s: platform error: %s", run_id, exc)
        Run.transition(run_id, Run.ACTIVE, Run.Status.ERROR, error_message=str(exc))
        return "error"
    except Exception as exc:
        log.exception("run %s: unexpected failure", run_id)
        Run.transition(run_id, Run.ACTIVE, Run.Status.ERROR, error_message=f"internal error: {exc}")
        return "error"


def _execute(run: Run, backend: str, hostname: str, gpu_index: int | None = None) -> str:
    env = dict(run.env)
    pausable = run.purpose in pausing.PAUSABLE_PURPOSES
    if pausable and run.control:
        # The settings as they are now reach the ranks before their first step; later changes go
        # through the watcher.
        env[protocol.ENV_PAUSE] = json.dumps(pausing.settings_for_ranks(run.control))
    program = ProgramSpec(files=run.files, entry=run.entry, ranks=run.ranks, env=env)
    limits = limits_for(run, gpu_index)
    deadline = timezone.now() + timedelta(seconds=run.timeout_seconds)
    labels = {
        "faultline.run": str(run.pk),
        INSTANCE_LABEL: instance_id(),
        "faultline.worker": hostname,
        "faultline.deadline": str(int(deadline.timestamp())),
        "faultline.started": str(int(time.time())),
    }
    clock = pausing.PauseClock() if pausable else None
    state = StreamState(run_id=run.pk, pause_clock=clock)
    # A judged run's grader needs the cores the run had: the warm pool refills once the run is judged,
    # not as its container goes.
    with warm_pool.held() if judge_for(run.purpose) is not None else contextlib.nullcontext():
        with open_sandbox(backend, program, limits, labels) as box:
            box.start()
            moved = Run.transition(
                run.pk, [Run.Status.STARTING], Run.Status.RUNNING,
                backend=backend, started_at=timezone.now(), deadline_at=deadline,
                container_id=getattr(box, "container_id", ""),
            )  # fmt: skip
            if not moved:  # cancelled between claim and start
                box.kill()
                return Run.objects.get(pk=run.pk).status
            watcher = _Watcher(
                run.pk, box, deadline_monotonic=time.monotonic() + run.timeout_seconds, deadline_at=deadline,
                pause_clock=clock, control_rev=run.control_rev, control=run.control,
            )  # fmt: skip
            watcher.start()
            last_flush = time.monotonic()
            try:
                for line in box.lines():
                    state.add_line(line)
                    if state.due(last_flush):
                        state.flush()
                        last_flush = time.monotonic()
            finally:
                watcher.stop()
            output_ended = time.monotonic()
            state.ended_at = timezone.now()
            if watcher.deadline_stacks is not None:
                status, output = watcher.deadline_stacks
                RunDiagnostic.objects.create(
                    run_id=run.pk, kind=RunDiagnostic.Kind.STACKS, status=status, output=output,
                    finished_at=timezone.now(),
                )  # fmt: skip
            record_postmortems(run.pk, state.postmortems)
            execution = box.finish()
            state.flush()
            if judge_for(run.purpose) is None:
                # The outcome is final: record it before the container is removed (a few hundred ms nobody
                # needs to wait for). Judged runs are judged only once the container is gone.
                return _record_result(run, state, execution, watcher)
        # Where a candidate's wait for a result goes, for whoever operates the workers.
        log.info("run %s: output ended, container gone %.2f s later; judging", run.pk, time.monotonic() - output_ended)
        return _record_result(run, state, execution, watcher)


DEADLINE_STACKS_SECONDS = 10
DEADLINE_STACKS_NOTE = "Captured automatically at the deadline, just before the run was killed."


def postmortem_diagnostics(captures: list[dict]) -> list[tuple[str, str]]:
    """(diagnostic kind, output) per kind of capture, every rank's in one output like an asked-for dump.
    The output's first lines are the one-line summaries, which the workspace shows as the title."""
    grouped: dict[str, list[dict]] = {}
    for capture in captures:
        grouped.setdefault(str(capture["what"]), []).append(capture)
    results = []
    for what, items in grouped.items():
        items.sort(key=lambda item: item.get("rank") if isinstance(item.get("rank"), int) else -1)
        summaries = [f"rank {item.get('rank', '?')}: {item['summary']}" for item in items if item.get("summary")]
        body = [f"=== rank {item.get('rank', '?')} ===\n{str(item.get('text', '')).rstrip()}" for item in items]
        output = "\n".join([*summaries, POSTMORTEM_NOTES[what], *body])
        results.append((POSTMORTEM_DIAGNOSTIC_KINDS[what], output[:200_000]))
    return results


def record_postmortems(run_id: int, captures: list[dict], live_only: bool = False) -> None:
    """The captures as tool output. Those of a kind only ever captured automatically (the first non-finite
    loss) are written while the run goes on, and rewritten as more ranks send theirs: a run paused at its
    NaN shows what was found there. The rest (memory at exit) come once, at the end (``live_only=False``)."""
    now = timezone.now()
    for kind, output in postmortem_diagnostics(captures):
        if kind == RunDiagnostic.Kind.NONFINITE:
            RunDiagnostic.objects.update_or_create(
                run_id=run_id, kind=kind, defaults={"status": "done", "output": output, "finished_at": now}
            )
        elif not live_only:
            RunDiagnostic.objects.create(run_id=run_id, kind=kind, status="done", output=output, finished_at=now)


def stacks_at_deadline(box) -> tuple[str, str]:
    """Every rank's stack as the deadline hits: a hang or a stall stays diagnosable after the run is over,
    even for a candidate who was not watching when it froze. Bounded, and never in the way of the kill.
    Returns (status, output) for a RunDiagnostic the runner's own thread records."""
    try:
        output, status = box.diagnose("stacks", timeout=DEADLINE_STACKS_SECONDS), "done"
    except Exception as exc:  # noqa: BLE001 - the kill that follows matters more than this dump
        output, status = f"stack dump failed: {first_line(exc)}", "failed"
    return status, f"{DEADLINE_STACKS_NOTE}\n{output}"[:200_000]


class _Watcher(threading.Thread):
    """Beside the output loop: deadline, cancel requests, pause settings and diagnostics, about twice a
    second. A program that prints nothing (a hang) must still be killed and still be diagnosable."""

    def __init__(
        self, run_id: int, box, deadline_monotonic: float, deadline_at=None,
        pause_clock: pausing.PauseClock | None = None, control_rev: int = 0, control: dict | None = None,
    ) -> None:  # fmt: skip
        super().__init__(name=f"run-{run_id}-watch", daemon=True)
        self.run_id = run_id
        self.box = box
        self.deadline = deadline_monotonic
        self.deadline_at = deadline_at
        self.pause_clock = pause_clock
        self.control_rev = control_rev  # the settings the ranks have (at start: those in their environment)
        self.control = dict(control or {})
        self.touch = 0
        self.extended = 0  # whole seconds the deadline has moved on for pauses
        self.timed_out = False
        self.cancelled = False
        self.deadline_stacks: tuple[str, str] | None = None
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)

    def run(self) -> None:
        try:
            while not self._halt.wait(0.4):
                self._extend_for_pauses()
                if time.monotonic() >= self.deadline + self.extended:
                    self.timed_out = True
                    self.deadline_stacks = stacks_at_deadline(self.box)
                    self.box.kill()
                    return
                row = Run.objects.filter(pk=self.run_id).values("cancel_requested", "control_rev", "control").first()
                if row is not None and row["cancel_requested"]:
                    self.cancelled = True
                    self.box.kill()
                    return
                if row is not None and self.pause_clock is not None and row["control_rev"] != self.control_rev:
                    self.control_rev, self.control = row["control_rev"], row["control"]
                    self.box.control(pausing.settings_for_ranks(self.control, self.touch))
                served = False
                for diagnostic in RunDiagnostic.objects.filter(run_id=self.run_id, status="pending"):
                    output = self.box.diagnose(diagnostic.kind)
                    RunDiagnostic.objects.filter(pk=diagnostic.pk).update(
                        status="done", output=output[:200_000], finished_at=timezone.now()
                    )
                    served = True
                if served and self.pause_clock is not None and self.pause_clock.seconds() > 0:
                    # Someone is working with the paused program: that is not idleness.
                    self.touch += 1
                    self.box.control(pausing.settings_for_ranks(self.control, self.touch))
        finally:
            close_old_connections()

    def _extend_for_pauses(self) -> None:
        if self.pause_clock is None:
            return
        extended = int(self.pause_clock.seconds())
        if extended <= self.extended:
            return
        self.extended = extended
        if self.deadline_at is not None:
            # The reaper reads the deadline from the run: a paused run is not a lost one.
            Run.objects.filter(pk=self.run_id).update(deadline_at=self.deadline_at + timedelta(seconds=extended))


def _record_result(run: Run, state: StreamState, execution, watcher: _Watcher) -> str:
    try:
        return _record(run, state, execution, watcher)
    finally:
        # Artifacts of up to 64 MB passed through this process: hand the freed heap back to the OS so
        # a long-lived worker's footprint does not ratchet up run after run.
        execution.artifacts = []
        release_free_memory()


def _record(run: Run, state: StreamState, execution, watcher: _Watcher) -> str:
    RunArtifact.objects.bulk_create(
        RunArtifact(run_id=run.pk, name=a.name, size=len(a.content), content=a.content) for a in execution.artifacts
    )
    result = state.result(execution, watcher)
    fields = {
        "ended_at": state.ended_at or timezone.now(),
        "exit_code": result.exit_code,
        "exit_codes": result.exit_codes,
        "timed_out": result.timed_out,
        "oom_killed": result.oom_killed,
        "duration_seconds": result.duration,
        "peak_memory_bytes": result.peak_memory_bytes,
    }
    notes = []
    if result.output_full:
        notes.append("output folder full: the program filled its writable space, so its last files may be missing")
    if result.artifacts_skipped:
        notes.append("artifacts not copied: " + "; ".join(result.artifacts_skipped))
    if notes:
        fields["error_message"] = "\n".join(notes)[:2000]
    if result.cancelled:
        Run.transition(run.pk, [Run.Status.RUNNING], Run.Status.CANCELLED, **fields)
        return Run.Status.CANCELLED
    judge = judge_for(run.purpose)
    if judge is not None:
        return _judge(run, fields, judge, result)
    ok = result.exit_code == 0 and not result.timed_out and not result.oom_killed
    status = Run.Status.PASSED if ok else Run.Status.FAILED
    Run.transition(run.pk, [Run.Status.RUNNING], status, **fields)
    return Run.objects.get(pk=run.pk).status


def _judge(run: Run, fields: dict, judge, result: RunResult) -> str:
    """A judged run passes or fails by its judge (labs' grading), not by its exit code. The judge runs
    here, in the same delivery, so a worker that dies while judging leaves the run for the reaper."""
    if not Run.transition(run.pk, [Run.Status.RUNNING], Run.Status.GRADING, **fields):
        return Run.objects.get(pk=run.pk).status
    try:
        passed = judge(run.pk, result)
    except Exception as exc:
        log.exception("run %s: grading failed", run.pk)
        Run.transition(
            run.pk, [Run.Status.GRADING], Run.Status.ERROR,
            error_message=f"grading failed (platform fault, not counted): {first_line(exc)}",
        )  # fmt: skip
        return Run.Status.ERROR
    Run.transition(run.pk, [Run.Status.GRADING], Run.Status.PASSED if passed else Run.Status.FAILED)
    return Run.objects.get(pk=run.pk).status

"""What ``sitecustomize`` installs into every rank process before the candidate's code runs.

* SIGUSR1 → faulthandler writes every thread's Python stack to ``RUNDIR/diag/stacks-rank{r}.txt``.
* SIGUSR2 → a memory snapshot is written to ``RUNDIR/diag/memory-rank{r}.txt``.
* A background thread samples CUDA allocator statistics once torch has initialised CUDA.
* Every ``optimizer.step()`` bumps a counter that is reported at most once per second and at exit.
* The first non-finite loss given to ``report.step`` is captured with the offending layer, the batch and
  the stacks (``postmortem.py``), and a memory snapshot is taken at normal exit; both are written to
  ``RUNDIR/diag/`` and sent as ``postmortem`` events, so a run over in seconds is still examinable.
* At exit, a process group the program left open is destroyed (torch aborts on some exits otherwise).
* Candidate toggles: FAULTLINE_DETECT_ANOMALY, FAULTLINE_TRACEMALLOC, FAULTLINE_FAULTHANDLER_TIMEOUT.

Each piece is installed on its own and a failure only costs that piece (plus a one-line warning on
stderr): the candidate's program must run even when the harness cannot help it.
"""

from __future__ import annotations

import atexit
import faulthandler
import gc
import importlib.abc
import importlib.machinery
import os
import signal
import sys
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from . import pausing, postmortem, report
from .protocol import (
    ENV_DETECT_ANOMALY,
    ENV_FAULTHANDLER_TIMEOUT,
    ENV_OWNER_PID,
    ENV_RANK,
    ENV_RUN_DIR,
    ENV_TRACEMALLOC,
    memory_file_name,
    stacks_file_name,
)

SERVICE_TICK_S = 1.0
PROCESS_GROUP_CLOSE_S = 10.0
COUNTER_MIN_INTERVAL_S = 1.0
TOP_N = 15
OPTIMIZER_MODULE = "torch.optim.optimizer"
NN_MODULE = "torch.nn.modules.module"


class _State:
    def __init__(self) -> None:
        self.owner_pid = 0
        self.rank = "?"
        self.diag_dir: Path | None = None
        self.sigwait = False  # SIGUSR2 is consumed by the service thread rather than a Python handler
        self.stack_file: Any = None  # kept referenced: faulthandler only remembers the descriptor
        self.lock = threading.Lock()
        self.optimizer_hooked = False
        self.nonfinite: postmortem.NonFiniteWatch | None = None
        self.pauser: pausing.Pauser | None = None
        self.steps = 0
        self.steps_reported = 0  # nothing to say until the first step; the exit report always goes out
        self.last_counter_emit = 0.0
        self.warned: set[str] = set()


_state = _State()


def _warn(what: str, exc: BaseException) -> None:
    if what in _state.warned:
        return
    _state.warned.add(what)
    try:
        sys.stderr.write(f"faultline-harness: warning: {what} unavailable: {exc!r}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


def _guarded(what: str, func: Callable[..., object], *args: Any, **kwargs: Any) -> None:
    try:
        func(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a harness failure must never break the candidate's program
        _warn(what, exc)


def _is_owner() -> bool:
    # Forked children share our memory but are not the rank; only the rank reports and snapshots.
    return _state.owner_pid == os.getpid()


def install() -> None:
    """Entry point called from sitecustomize."""
    rank = os.environ.get(ENV_RANK)
    if rank is None:
        return  # not started by the launcher
    inherited_owner = os.environ.get(ENV_OWNER_PID)
    if inherited_owner and inherited_owner != str(os.getpid()):
        # A Python process started by the rank (spawned DataLoader worker, subprocess): it inherited the
        # rank's blocked SIGUSR2 but must leave the rank's diag files and counters alone.
        _guarded("signal mask reset", _unblock_sigusr2)
        return
    os.environ[ENV_OWNER_PID] = str(os.getpid())
    _state.owner_pid = os.getpid()
    _state.rank = rank
    run_dir = os.environ.get(ENV_RUN_DIR)
    if run_dir:
        _state.diag_dir = Path(run_dir) / "diag"
        _state.pauser = pausing.from_environment(Path(run_dir), rank, report.emit)

    _guarded("tracemalloc", _apply_tracemalloc)
    _guarded("faulthandler timeout", _apply_faulthandler_timeout)
    _guarded("stack dumps (SIGUSR1)", _install_stack_dumps)
    _guarded("memory snapshots (SIGUSR2)", _install_memory_snapshots)
    _guarded("optimizer step counter", _install_optimizer_watch)
    _guarded("non-finite loss capture", _install_nonfinite_watch)
    _guarded("harness service thread", _start_service_thread)
    _guarded("fork hook", os.register_at_fork, after_in_child=_after_fork_in_child)
    _guarded("exit hook", atexit.register, _at_exit)
    # Last, because it imports torch (seconds) and the watchers above should see that import.
    _guarded("autograd anomaly detection", _apply_detect_anomaly)


# ---- toggles -----------------------------------------------------------------------------------------


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _apply_tracemalloc() -> None:
    if _flag(ENV_TRACEMALLOC) and not tracemalloc.is_tracing():
        tracemalloc.start(25)


def _apply_faulthandler_timeout() -> None:
    raw = os.environ.get(ENV_FAULTHANDLER_TIMEOUT, "").strip()
    if raw:
        seconds = float(raw)
        if seconds > 0:
            faulthandler.dump_traceback_later(seconds, repeat=True)


def _apply_detect_anomaly() -> None:
    if _flag(ENV_DETECT_ANOMALY):
        import torch

        torch.autograd.set_detect_anomaly(True)


# ---- stacks (SIGUSR1) --------------------------------------------------------------------------------


def _install_stack_dumps() -> None:
    if _state.diag_dir is None:
        return
    _state.diag_dir.mkdir(parents=True, exist_ok=True)
    path = _state.diag_dir / stacks_file_name(_state.rank)
    # O_APPEND matters: diag truncates the file before each request, and an append-mode descriptor
    # then writes from offset 0 again instead of leaving a hole of NUL bytes where the old dump was.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    _state.stack_file = os.fdopen(fd, "a", encoding="utf-8")
    faulthandler.register(signal.SIGUSR1, file=_state.stack_file, all_threads=True, chain=False)


# ---- memory snapshots (SIGUSR2) ----------------------------------------------------------------------


def _install_memory_snapshots() -> None:
    if _state.diag_dir is None:
        return
    _state.diag_dir.mkdir(parents=True, exist_ok=True)
    if hasattr(signal, "sigtimedwait") and hasattr(signal, "pthread_sigmask"):
        # Block the signal here (threads created later inherit the mask) and let the service thread
        # collect it with sigtimedwait: a Python-level handler would only run once the main thread
        # returns to the interpreter, which never happens while it is stuck inside a collective.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
        _state.sigwait = True
    else:
        signal.signal(signal.SIGUSR2, lambda _signum, _frame: _guarded("memory snapshot", write_memory_snapshot))


def _unblock_sigusr2() -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR2})


def write_memory_snapshot() -> None:
    if _state.diag_dir is None:
        return
    path = _state.diag_dir / memory_file_name(_state.rank)
    text = memory_snapshot_text()
    # Write-then-rename so diag never reads half a report.
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def memory_snapshot_text() -> str:
    out: list[str] = [f"# memory snapshot: rank {_state.rank}, pid {os.getpid()}, {time.strftime('%H:%M:%S')}", ""]
    out += _section("process", _process_memory_lines)
    out += _section(f"top {TOP_N} object types by count (gc-tracked objects)", _gc_type_lines)
    if "torch" in sys.modules:
        out += _section("torch tensors reachable through gc", _tensor_lines)
    if tracemalloc.is_tracing():
        out += _section(f"tracemalloc: top {TOP_N} allocation sites", _tracemalloc_lines)
    else:
        out += ["## tracemalloc", "not tracing (run with FAULTLINE_TRACEMALLOC=1 to see allocation sites)", ""]
    torch = sys.modules.get("torch")
    if torch is not None and _cuda_initialized(torch):
        out += _section("torch.cuda.memory_summary()", lambda: torch.cuda.memory_summary().splitlines())
    return "\n".join(out) + "\n"


def _section(title: str, produce: Callable[[], Sequence[str]]) -> list[str]:
    try:
        body = list(produce())
    except Exception as exc:  # noqa: BLE001 - one broken section should not cost the whole report
        body = [f"(unavailable: {exc!r})"]
    return [f"## {title}", *body, ""]


def _process_memory_lines() -> list[str]:
    wanted = ("VmRSS", "VmHWM", "VmSize", "VmSwap", "RssAnon", "RssFile", "Threads")
    lines = []
    with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
        for line in fh:
            key = line.split(":", 1)[0]
            if key in wanted:
                lines.append(" ".join(line.split()))
    return lines


def _type_name(kind: type) -> str:
    module = getattr(kind, "__module__", "")
    name = getattr(kind, "__qualname__", kind.__name__)
    return name if module in ("builtins", "", None) else f"{module}.{name}"


def _gc_type_lines() -> list[str]:
    counts = Counter(type(obj) for obj in gc.get_objects())
    total = sum(counts.values())
    lines = [f"{count:>10}  {_type_name(kind)}" for kind, count in counts.most_common(TOP_N)]
    lines.append(f"{total:>10}  (all gc-tracked objects)")
    frozen = gc.get_freeze_count()
    if frozen:
        # A warm (zygote) rank inherits the libraries it was forked with in gc's permanent generation.
        lines.append(f"{frozen:>10}  (not counted above: objects of libraries preloaded before the rank started)")
    return lines


def _tensor_lines() -> list[str]:
    torch = sys.modules["torch"]
    tensor_type = torch.Tensor
    count = 0
    by_device: Counter[str] = Counter()
    seen: set[tuple[str, int]] = set()
    for obj in gc.get_objects():
        # type() rather than isinstance(): isinstance may consult a __class__ property on proxies.
        if not issubclass(type(obj), tensor_type):
            continue
        count += 1
        try:
            storage = obj.untyped_storage()
            key = (str(obj.device), storage.data_ptr())
            if key in seen:
                continue  # views share their base's storage
            seen.add(key)
            by_device[key[0]] += storage.nbytes()
        except Exception:  # noqa: BLE001 - meta/sparse/fake tensors have no plain storage
            continue
    lines = [f"{count} tensor objects"]
    for device, nbytes in by_device.items():
        lines.append(f"{device}: {nbytes / 2**20:.1f} MiB of unique storage ({nbytes} bytes)")
    return lines


def _tracemalloc_lines() -> list[str]:
    stats = tracemalloc.take_snapshot().statistics("lineno")
    return [str(stat) for stat in stats[:TOP_N]]


# ---- CUDA sampling and the service thread -----------------------------------------------------------


def _cuda_initialized(torch: ModuleType) -> bool:
    cuda = getattr(torch, "cuda", None)
    is_initialized = getattr(cuda, "is_initialized", None)
    return bool(is_initialized and is_initialized())


def _sample_cuda() -> None:
    torch = sys.modules.get("torch")
    if torch is None or not _cuda_initialized(torch):
        return
    cuda = torch.cuda
    allocated = reserved = peak = 0
    # Stats are per device and the current device is per thread, so sum over all devices rather than
    # asking for "the" device from this background thread.
    for device in range(cuda.device_count()):
        allocated += cuda.memory_allocated(device)
        reserved += cuda.memory_reserved(device)
        peak += cuda.max_memory_allocated(device)
    report.emit(
        {
            "kind": "cuda_memory",
            "allocated_bytes": allocated,
            "reserved_bytes": reserved,
            "max_allocated_bytes": peak,
        }
    )


def _start_service_thread() -> None:
    threading.Thread(target=_service_loop, name="faultline-harness", daemon=True).start()


def _service_loop() -> None:
    last_tick = 0.0
    while True:
        try:
            if _state.sigwait:
                if signal.sigtimedwait([signal.SIGUSR2], SERVICE_TICK_S) is not None:
                    _guarded("memory snapshot", write_memory_snapshot)
            else:
                time.sleep(SERVICE_TICK_S)
            now = time.monotonic()
            if now - last_tick >= SERVICE_TICK_S:
                last_tick = now
                if not _state.optimizer_hooked and _fully_imported(OPTIMIZER_MODULE):
                    _guarded("optimizer step counter", _hook_optimizer_module, sys.modules[OPTIMIZER_MODULE])
                if _state.nonfinite is None and _fully_imported(NN_MODULE):
                    _guarded("non-finite loss capture", _hook_nn_module, sys.modules[NN_MODULE])
                _guarded("cuda memory sampling", _sample_cuda)
                _flush_counter(force=False)
        except Exception as exc:  # noqa: BLE001 - keep serving; warn once
            _warn("harness service loop", exc)
            time.sleep(SERVICE_TICK_S)


def _fully_imported(name: str) -> bool:
    # A module is in sys.modules while its code still runs (on the main thread, during ``import torch``);
    # this thread must wait for the end rather than find half of its functions.
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    return module is not None and not getattr(spec, "_initializing", False)


# ---- optimizer step counter --------------------------------------------------------------------------


class _OptimizerModuleWatcher(importlib.abc.MetaPathFinder):
    """Hooks torch's optimizer module (and ``nn.Module``'s, for the non-finite watch) the moment it is
    imported, without importing torch ourselves.

    The global step post-hook fires for every Optimizer subclass (torch wraps each subclass's ``step``
    on construction), which patching ``Optimizer.step`` itself would miss because subclasses override it.
    """

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        hook = _pending_import_hook(fullname)
        if hook is None:
            return None
        try:
            return self._hooked_spec(fullname, path, target, hook)
        except Exception as exc:  # noqa: BLE001 - let the normal import machinery take over
            _warn(f"import hook for {fullname}", exc)
            return None

    def _hooked_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None,
        hook: Callable[[ModuleType], None],
    ) -> importlib.machinery.ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        original = getattr(loader, "exec_module", None)
        if original is None:
            return spec  # the service thread's sys.modules check still picks the module up

        def exec_module(module: ModuleType) -> None:
            original(module)
            _guarded(f"import hook for {fullname}", hook, module)

        try:
            loader.exec_module = exec_module  # type: ignore[union-attr]
        except (AttributeError, TypeError):
            pass  # immutable loader; fall back to the service thread
        return spec


def _pending_import_hook(fullname: str) -> Callable[[ModuleType], None] | None:
    if fullname == OPTIMIZER_MODULE and not _state.optimizer_hooked:
        return _hook_optimizer_module
    if fullname == NN_MODULE and _state.nonfinite is None:
        return _hook_nn_module
    return None


def _ensure_import_watcher() -> None:
    if not any(isinstance(finder, _OptimizerModuleWatcher) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OptimizerModuleWatcher())


def _install_optimizer_watch() -> None:
    module = sys.modules.get(OPTIMIZER_MODULE)
    if module is not None:
        _hook_optimizer_module(module)
    else:
        _ensure_import_watcher()


def _hook_optimizer_module(module: ModuleType) -> None:
    with _state.lock:
        if _state.optimizer_hooked:
            return
        module.register_optimizer_step_post_hook(_on_optimizer_step)
        _state.optimizer_hooked = True


# ---- post-mortem: first non-finite loss, memory at exit -----------------------------------------------


def _install_nonfinite_watch() -> None:
    report.step_observer = _on_report_step
    module = sys.modules.get(NN_MODULE)
    if module is not None:
        _hook_nn_module(module)
    else:
        _ensure_import_watcher()


def _hook_nn_module(module: ModuleType) -> None:
    # The global hook registry lives in torch.nn.modules.module, which is all this needs of torch; the
    # rest of torch is looked up on the first hook call, after ``import torch`` has finished.
    with _state.lock:
        if _state.nonfinite is not None:
            return
        watch = postmortem.NonFiniteWatch(sys.modules["torch"])
        watch.install(module)
        _state.nonfinite = watch


def _on_report_step(step: int, loss: object) -> None:
    if not _is_owner():
        return
    _capture_nonfinite(step, loss)
    pauser = _state.pauser
    if pauser is not None:
        # After the capture, so a run paused at its first non-finite loss already shows what was found.
        _guarded("pause at a step", pauser.at_step, step, loss)


def _capture_nonfinite(step: int, loss: object) -> None:
    watch = _state.nonfinite
    if watch is None:
        return
    try:
        capture = watch.end_step(step, loss, postmortem.stacks_text)
    except Exception as exc:  # noqa: BLE001 - a failed capture must not break the program's reporting
        _warn("non-finite loss capture", exc)
        return
    if capture is None:
        return
    if _state.diag_dir is not None:
        _guarded("non-finite loss capture file", _write_diag, postmortem.capture_file_name(_state.rank), capture.text)
    report.emit(
        {
            "kind": postmortem.KIND,
            "what": postmortem.NONFINITE,
            "step": capture.step,
            "layer": capture.layer,
            "summary": capture.summary,
            "text": capture.text,
        }
    )
    report.note(f"{capture.summary} (details in the run's tool output)")


def _write_diag(name: str, text: str) -> None:
    assert _state.diag_dir is not None
    _state.diag_dir.mkdir(parents=True, exist_ok=True)
    postmortem.write_text(_state.diag_dir / name, text)


def _memory_snapshot_at_exit() -> None:
    if not _is_owner():
        return
    text = memory_snapshot_text()
    if _state.diag_dir is not None:
        _guarded("memory snapshot at exit", _write_diag, memory_file_name(_state.rank), text)
    if len(text) > postmortem.TEXT_CAP:
        text = text[: postmortem.TEXT_CAP] + "\n... (cut)\n"
    report.emit({"kind": postmortem.KIND, "what": postmortem.MEMORY_AT_EXIT, "text": text})


def _on_optimizer_step(_optimizer: object, _args: object, _kwargs: object) -> None:
    if not _is_owner():
        return
    with _state.lock:
        _state.steps += 1
    if time.monotonic() - _state.last_counter_emit >= COUNTER_MIN_INTERVAL_S:
        _flush_counter(force=False)


def _flush_counter(force: bool) -> None:
    if not _state.optimizer_hooked or not _is_owner():
        return
    with _state.lock:
        value = _state.steps
        if value == _state.steps_reported and not force:
            return
        _state.steps_reported = value
        _state.last_counter_emit = time.monotonic()
    report.emit({"kind": "counter", "name": "optimizer_steps", "value": value})


def _at_exit() -> None:
    _guarded("optimizer step counter", _flush_counter, True)
    # Guarded like everything here: a failing snapshot must not change the exit status or bury the
    # program's own traceback (which Python has printed by the time atexit handlers run).
    _guarded("memory snapshot at exit", _memory_snapshot_at_exit)
    _guarded("process group shutdown", _close_process_group)


def _close_process_group() -> None:
    # A gloo process group still alive at interpreter teardown aborts the process ("terminate called
    # without an active exception") in roughly one exit in three with torch 2.13, so a program that
    # finished its work would fail for omitting destroy_process_group(). We do what a tidy program does.
    # On a helper thread: a collective stuck in the group must not hold the exit for long.
    dist = sys.modules.get("torch.distributed")
    if dist is None or not _is_owner() or not dist.is_available() or not dist.is_initialized():
        return
    closer = threading.Thread(target=_guarded, args=("process group shutdown", dist.destroy_process_group), daemon=True)
    closer.start()
    closer.join(PROCESS_GROUP_CLOSE_S)


def _after_fork_in_child() -> None:
    # The child has none of our threads and must not answer for the rank; give it a normal mask back.
    _guarded("signal mask reset", _unblock_sigusr2)

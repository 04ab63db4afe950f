"""Post-mortem captures taken inside a rank without anyone asking: most lab runs are over in seconds.

* The first non-finite loss: which module's output went non-finite first, the batch, the rank's stacks.
* (In ``_rankside``) a memory snapshot at normal interpreter exit.

Each capture is written to ``RUNDIR/diag/`` and sent as one ``postmortem`` telemetry event, which the
platform lists with the run's tool output. It is reported by the program, so it is display only.

The non-finite watch:

Design: the forward hooks are installed (globally, for every ``nn.Module``) as soon as torch's module
class exists, and each one only queues the *sum* of the output as a 0-d tensor; nothing is read back
until a step reports a non-finite loss, so normal steps pay one small reduction per module call and no
device synchronisation. A NaN or inf element makes the sum non-finite (inf and -inf give NaN), and
summing costs a fifth of ``isfinite(x).all()``, which writes a full boolean copy first
(measured on a lab's MLP on CPU: +7 % per step instead of +50 %). Half-precision outputs are summed in
float32 so that a large but finite activation cannot overflow the sum; a float32 output is reported
non-finite only if its finite values sum past 3e38, i.e. a layer on the verge of overflowing anyway.
A container whose output is its last child's very tensor (``nn.Sequential``) is not checked twice.

The sums are written into slots of a buffer allocated once per device and dtype, never kept as tensors of
their own, and the last output is held only by a weak reference. Holding thousands of small 0-d tensors
between a program's large activations pinned the heap: a transformer scoring padded batches without ever
reporting a step held 2.9 GiB instead of 0.8 under the watch, enough for an OOM kill the candidate would
blame on the program.

Arming the hooks only after the first bad loss and looking at the *next* step would be cheaper still,
but it names the wrong layer: by then ``optimizer.step()`` has usually written the non-finite
gradients into the weights, and the model's first layer is "the first non-finite output" whatever
the real origin was.

A step ends at ``report.step(...)``: the queued checks since the previous report belong to this step.
Only plain tensors are checked (``type(t) is Tensor``), so fake, meta and proxy tensors of tracers and
compilers are left alone, and nothing is recorded while torch is compiling or tracing.

Everything here is display for the candidate: it runs inside the program and is never grading evidence.
"""

from __future__ import annotations

import faulthandler
import math
import os
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .protocol import POSTMORTEM, POSTMORTEM_MEMORY_AT_EXIT, POSTMORTEM_NONFINITE

__all__ = ["KIND", "MEMORY_AT_EXIT", "NONFINITE", "Capture", "NonFiniteWatch", "capture_file_name"]

# The telemetry event kind and its two "what"s, defined with the rest of the line protocol.
KIND, NONFINITE, MEMORY_AT_EXIT = POSTMORTEM, POSTMORTEM_NONFINITE, POSTMORTEM_MEMORY_AT_EXIT

MAX_CHECKS_PER_STEP = 4096  # bounds the queue of a program that reports rarely (or never)
MAX_TENSORS_LISTED = 16
STATS_CHUNK_ELEMENTS = 1 << 20  # 4 MiB of float32 at a time, whatever the size of the tensor
TEXT_CAP = 40_000  # the capture travels as one telemetry line, capped by the launcher at 64 KiB
NON_FINITE_STRINGS = frozenset({"nan", "inf", "-inf"})


def capture_file_name(rank: int | str) -> str:
    return f"first-nonfinite-rank{rank}.txt"


def is_nonfinite_report(value: Any) -> bool:
    """Whether a value passed to ``report.step(loss=...)`` is NaN or infinite (after ``jsonable``)."""
    return isinstance(value, str) and value in NON_FINITE_STRINGS


@dataclass
class Capture:
    step: int
    layer: str | None  # None: no module output was non-finite in this step
    text: str
    summary: str


@dataclass
class _StepRecord:
    root: Any = None  # the first module called in the step: the outermost model, whose input is the batch
    # Weak references: holding the batch itself would keep a GPU batch alive into the next step and raise
    # the peak memory of every run. A program still holds its batch when it reports the step.
    batch: list[weakref.ref[Any]] = field(default_factory=list)
    # (module, buffer): the sum of the output of the module call at index i of this list is buffer[i]
    checks: list[tuple[Any, Any]] = field(default_factory=list)
    last_output: Any = None  # weak reference to the tensor checked last: a container returning it is not summed again


class NonFiniteWatch:
    """Owns the global forward hooks and turns the first non-finite step into a :class:`Capture`."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.captured = False
        self._record = _StepRecord()
        self._handles: list[Any] = []
        self._buffers: dict[tuple[Any, Any], Any] = {}
        # Looked up at the first hook call: the hooks go in while ``import torch`` is still running.
        self._tracing_checks: tuple[Callable[[], bool], ...] | None = None

    def install(self, module: Any = None) -> None:
        """``module``: ``torch.nn.modules.module`` when it is given by an import hook, before ``torch.nn``
        exists as an attribute of the (still importing) torch package."""
        module = module if module is not None else self.torch.nn.modules.module
        self._handles = [
            module.register_module_forward_pre_hook(self._pre_hook),
            module.register_module_forward_hook(self._hook),
        ]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    # ---- hooks: cheap, no synchronisation -------------------------------------------------------------

    def _pre_hook(self, module: Any, args: tuple[Any, ...]) -> None:
        record = self._record
        if record.root is None and not self.captured:
            record.root = module
            record.batch = [weakref.ref(tensor) for tensor in _tensors(args, self.torch.Tensor)]

    def _hook(self, module: Any, _args: tuple[Any, ...], output: Any) -> None:
        record = self._record
        if self.captured or len(record.checks) >= MAX_CHECKS_PER_STEP:
            return
        checks = self._tracing_checks
        if checks is None:
            checks = self._tracing_checks = self._find_tracing_checks()
        if any(check() for check in checks):
            return
        if record.last_output is not None and output is record.last_output():
            return
        buffer = self._output_sum(output, len(record.checks))
        if buffer is not None:
            record.checks.append((module, buffer))
            record.last_output = weakref.ref(output) if isinstance(output, self.torch.Tensor) else None

    def _find_tracing_checks(self) -> tuple[Callable[[], bool], ...]:
        torch = self.torch
        found = (
            getattr(getattr(torch, "compiler", None), "is_compiling", None),
            getattr(getattr(torch, "jit", None), "is_tracing", None),
        )
        return tuple(check for check in found if callable(check))

    def _output_sum(self, output: Any, slot: int) -> Any:
        """Writes the sum of the output's floating tensors into ``slot`` of a buffer; returns the buffer."""
        torch = self.torch
        buffer = None
        for tensor in _tensors(output, torch.Tensor):
            if tensor.is_meta or not tensor.is_floating_point() or tensor.numel() == 0:
                continue
            wide = torch.float32 if tensor.element_size() < 4 else tensor.dtype
            try:
                # The 0-d sum lives only until it is copied into the slot.
                part = tensor.detach().sum(dtype=wide)
                if buffer is None:
                    target = self._buffer(tensor.device, wide)
                    target[slot] = part
                    buffer = target
                else:
                    buffer[slot] += part
            except Exception:  # noqa: BLE001 - a transform that refuses the copy costs this check, not the program
                return buffer
        return buffer

    def _buffer(self, device: Any, dtype: Any) -> Any:
        key = (device, dtype)
        buffer = self._buffers.get(key)
        if buffer is None:
            torch = self.torch
            # A normal tensor even when first needed inside inference mode: an inference tensor could not be
            # written later outside it.
            with torch.inference_mode(False), torch.no_grad():
                buffer = self._buffers[key] = torch.zeros(MAX_CHECKS_PER_STEP, dtype=dtype, device=device)
        return buffer

    # ---- step boundary ---------------------------------------------------------------------------------

    def end_step(self, step: int, loss: Any, stacks: Callable[[], str]) -> Capture | None:
        """Called from ``report.step``; returns a capture for the first step whose loss is non-finite."""
        record, self._record = self._record, _StepRecord()
        if self.captured or not is_nonfinite_report(loss):
            return None
        self.captured = True  # before the work below: a failure there must not retry on every step
        self.remove()
        return build_capture(self.torch, step, loss, record, stacks())


def _tensors(value: Any, tensor_type: type, depth: int = 0) -> Iterable[Any]:
    if type(value) is tensor_type or type(value).__name__ == "Parameter":
        yield value
    elif depth < 2 and isinstance(value, list | tuple):
        for item in value:
            yield from _tensors(item, tensor_type, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item, tensor_type, depth + 1)


def module_names(root: Any) -> dict[int, str]:
    try:
        return {id(module): name for name, module in root.named_modules()}
    except Exception:  # noqa: BLE001 - a model with a broken named_modules still gets class names
        return {}


def describe_module(module: Any, names: dict[int, str]) -> str:
    kind = type(module).__name__
    name = names.get(id(module))
    if name is None:
        return f"{kind} (outside the model)"
    return f"{name} ({kind})" if name else f"{kind} (the whole model)"


def first_nonfinite(checks: list[tuple[Any, Any]]) -> tuple[int, Any] | None:
    for index, (module, buffer) in enumerate(checks):
        if not math.isfinite(float(buffer[index])):
            return index, module
    return None


def tensor_stats(torch: Any, tensor: Any) -> str:
    shape = "x".join(str(size) for size in tensor.shape) or "scalar"
    head = f"shape {shape}, dtype {str(tensor.dtype).removeprefix('torch.')}, device {tensor.device}"
    if tensor.numel() == 0:
        return head + ", empty"
    if not (tensor.is_floating_point() or tensor.is_complex()):
        values = tensor.detach()
        return head + f", min {values.min().item()}, max {values.max().item()}"
    bad = nans = finite_count = 0
    low, high, total = math.inf, -math.inf, 0.0
    for chunk in _chunks(tensor.detach()):
        values = chunk.abs().float() if chunk.is_complex() else chunk.float()
        finite = torch.isfinite(values)
        kept_count = int(finite.sum().item())
        bad += values.numel() - kept_count
        nans += int(torch.isnan(values).sum().item())
        if kept_count:
            kept = values[finite]
            low, high = min(low, kept.min().item()), max(high, kept.max().item())
            total += kept.sum(dtype=torch.float64).item()
            finite_count += kept_count
    text = head + f", non-finite {bad} of {tensor.numel()} (nan {nans}, inf {bad - nans})"
    if finite_count:
        text += f", finite min {low:.6g}, max {high:.6g}, mean {total / finite_count:.6g}"
    return text


def _chunks(tensor: Any) -> Iterable[Any]:
    """The tensor's elements in pieces of about STATS_CHUNK_ELEMENTS. The statistics need float32 copies and
    masks of what they look at: of a whole 256 MiB half-precision activation that is over a GiB more, which
    can push a job that fits its memory limit into an OOM kill the candidate would blame on the program."""
    if tensor.dim() == 0:
        yield tensor.reshape(1)
        return
    if tensor.is_contiguous():
        flat = tensor.view(-1)
        for start in range(0, flat.numel(), STATS_CHUNK_ELEMENTS):
            yield flat[start : start + STATS_CHUNK_ELEMENTS]
        return
    rows = max(1, STATS_CHUNK_ELEMENTS // max(1, tensor[0].numel()))
    for start in range(0, tensor.shape[0], rows):
        yield tensor[start : start + rows].reshape(-1)


def _any_nonfinite(torch: Any, tensors: Iterable[Any]) -> bool:
    try:
        return any(
            not bool(torch.isfinite(chunk).all())
            for t in tensors
            if t.is_floating_point()
            for chunk in _chunks(t.detach())
        )
    except Exception:  # noqa: BLE001 - only a remark; the statistics above say it anyway
        return False


def _stats_lines(torch: Any, label: str, values: Iterable[tuple[str, Any]]) -> list[str]:
    lines = []
    for count, (name, tensor) in enumerate(values):
        if count >= MAX_TENSORS_LISTED:
            lines.append(f"  ... (more {label} not listed)")
            break
        try:
            lines.append(f"  {name}: {tensor_stats(torch, tensor)}")
        except Exception as exc:  # noqa: BLE001 - one odd tensor must not cost the capture
            lines.append(f"  {name}: (statistics unavailable: {exc!r})")
    return lines or [f"  (no tensors among the {label})"]


def build_capture(torch: Any, step: int, loss: Any, record: _StepRecord, stack_text: str) -> Capture:
    names = module_names(record.root) if record.root is not None else {}
    found = first_nonfinite(record.checks)
    out = [
        f"# first non-finite loss: step {step}, loss {loss}, rank {os.environ.get('FAULTLINE_RANK', '?')}, "
        f"{time.strftime('%H:%M:%S')}",
        "Captured automatically inside the program (display only, never used for grading).",
        "",
        "## offending layer",
    ]
    layer = None
    if found is not None:
        index, module = found
        layer = describe_module(module, names)
        out.append(
            f"{layer}: the first module output with a non-finite value in this step "
            f"(module call {index + 1} of {len(record.checks)} checked, in execution order)"
        )
        params = [(name, p) for name, p in module.named_parameters(recurse=False)]
        out.append("parameters of that module:")
        out += _stats_lines(torch, "parameters", params)
        if _any_nonfinite(torch, (p for _name, p in params)):
            out.append(
                "its parameters are already non-finite, so this step only shows the damage: an earlier "
                "update (the gradients or optimizer step of a previous step) wrote them"
            )
    elif record.checks:
        out.append(
            f"none: all {len(record.checks)} module outputs of this step were finite, so the first non-finite "
            "value appeared after the model's forward pass (in the loss computation or other code outside "
            "nn.Module.forward)"
        )
    else:
        out.append("unknown: no module forward ran since the previous report (or the hooks were not active)")
    out += ["", "## last batch (the inputs of the outermost module call of this step)"]
    batch = [(f"input {i}", ref()) for i, ref in enumerate(record.batch)]
    freed = [name for name, tensor in batch if tensor is None]
    if record.root is None:
        out.append("  (no module call seen)")
    else:
        out += _stats_lines(torch, "inputs", [(name, tensor) for name, tensor in batch if tensor is not None])
        if freed:
            out.append(f"  ({', '.join(freed)}: already freed by the program before it reported the step)")
    out += ["", "## stacks of this rank (all threads)", stack_text.rstrip("\n"), ""]
    text = "\n".join(out)
    if len(text) > TEXT_CAP:
        text = text[:TEXT_CAP] + "\n... (cut)\n"
    where = f"in layer {layer}" if layer else "outside any module's forward"
    summary = f"first non-finite loss at step {step} {where}"
    return Capture(step=step, layer=layer, text=text, summary=summary)


def stacks_text() -> str:
    """Every thread's Python stack, as faulthandler prints it (it only writes to real files)."""
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as handle:
        faulthandler.dump_traceback(file=handle, all_threads=True)
        handle.flush()
        handle.seek(0)
        return handle.read()


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)

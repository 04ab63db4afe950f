"""Named check types that grade a fix by what was measured outside the candidate's code.

A lab lists its checks as data (``checks:`` in lab.yaml); each type validates its
options when the lab is loaded and, when grading, reports the measured value next to
the threshold so the candidate sees exactly why a check passed or failed.

Every check type reads one kind of evidence, named by its ``source``. Most read only
what the platform measured (``Outcome.result``, the grader's ``metrics``, the validated
``baseline``). The display-only types read what the program reported about itself
(``Outcome.reported``): their results are shown, labelled as such, and never count.
"""

from __future__ import annotations

import math
import operator
from dataclasses import asdict, dataclass, field

from django.utils.translation import gettext, gettext_noop

from sandbox.judging import RunResult

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq}
MIB = 1024 * 1024
REPORTED_BY_PROGRAM = gettext_noop("reported by the program")
NOT_MEASURED = gettext_noop("not measured")


@dataclass
class Reported:
    """What the program's own ranks sent (losses, counters): anyone's code can print these."""

    losses: list[float] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)  # summed over ranks


@dataclass
class Outcome:
    """Everything a check may look at, gathered after the run ended."""

    ranks: int
    timeout_seconds: int
    result: RunResult  # measured outside the program
    metrics: dict[str, float] = field(default_factory=dict)  # from the grader's own container
    grader_error: str = ""
    baseline: dict = field(default_factory=dict)  # measured on the faulty program when the lab was validated
    # Per memory check: the reference fix's held level on this seed, in MiB (labs.reference).
    reference_memory: dict[str, float] = field(default_factory=dict)
    reported: Reported = field(default_factory=Reported)  # display only


class Text(str):
    """An English text that remembers its translatable template and values, so a page can show it in the
    reader's language while stored results and ``gradefix`` keep the English."""

    msgid: str
    values: dict

    def __new__(cls, msgid: str, **values) -> Text:
        text = super().__new__(cls, msgid % values if values else msgid)
        text.msgid, text.values = msgid, values
        return text


def text(msgid: str, **values) -> Text:
    return Text(msgid, **{k: str(v) for k, v in values.items()})


@dataclass
class CheckResult:
    name: str
    type: str
    passed: bool
    measured: str
    threshold: str
    detail: str = ""
    source: str = ""
    gate: bool = False
    counts: str = ""  # "distinguishing" | "precondition" | "display"; set by labs.scoring
    # How far the measurement sits on the passing side of its threshold, as a fraction of the threshold;
    # negative when it fails, None when nothing was measured or the threshold is exact (see margin()).
    margin: float | None = None

    def as_dict(self) -> dict:
        data = asdict(self)
        texts = {
            key: {"msgid": value.msgid, "values": value.values}
            for key in ("measured", "threshold", "detail")
            if isinstance(value := getattr(self, key), Text)
        }
        if texts:
            data["texts"] = texts
        return data


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def margin(value: float, op: str, target: float) -> float | None:
    """Signed distance of ``value`` from ``target`` on the side ``op`` accepts, as a fraction of ``target``.

    Validation prints these for the reference and the faulty program, so a threshold set too close to
    either shows before a loaded machine flips it. An exact threshold (``==``) or a threshold of 0 has no
    relative distance: None, as for a value that was not measured or is not finite."""
    if not math.isfinite(value) or op == "==" or target == 0:
        return None
    distance = value - target if op in (">=", ">") else target - value
    return round(distance / abs(target), 4)


def _fmt(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"


class CheckType:
    required: dict[str, str] = {}  # option → "number" | "string" | "op"
    optional: dict[str, str] = {}
    display_only = False
    source = ""

    def validate(self, options: dict) -> str:
        for key in options:
            if key not in self.required and key not in self.optional:
                return f"unknown option {key!r} (allowed: {', '.join([*self.required, *self.optional]) or 'none'})"
        for key, kind in {**self.required, **self.optional}.items():
            if key not in options:
                if key in self.required:
                    return f"option {key!r} is required"
                continue
            value = options[key]
            if isinstance(value, str) and value.strip().startswith("{{"):
                continue  # a parameter placeholder, checked against params by the spec parser
            if kind == "number" and not _number(value):
                return f"{key} must be a number, got {value!r}"
            if kind == "string" and not (isinstance(value, str) and value):
                return f"{key} must be text, got {value!r}"
            if kind == "op" and value not in OPS:
                return f"{key} must be one of {' '.join(OPS)}, got {value!r}"
        return ""

    def evaluate(self, name: str, type_name: str, options: dict, outcome: Outcome) -> CheckResult:
        raise NotImplementedError


class FinishedInTime(CheckType):
    optional = {"max_seconds": "number"}
    source = gettext_noop("wall time and deadline kept by the worker")

    def evaluate(self, name, type_name, options, outcome):
        result = outcome.result
        limit = float(options.get("max_seconds", outcome.timeout_seconds))
        duration = result.duration if result.duration is not None else math.inf
        passed = not result.timed_out and not result.cancelled and duration <= limit
        if result.timed_out:
            measured = text(gettext_noop("killed at the deadline"))
        else:
            measured = text(gettext_noop("%(seconds)s s"), seconds=_fmt(duration))
        threshold = text(gettext_noop("≤ %(seconds)s s"), seconds=_fmt(limit))
        slack = None if result.timed_out or result.cancelled else margin(duration, "<=", limit)
        return CheckResult(name, type_name, passed, measured, threshold, margin=slack)


class RanksExitZero(CheckType):
    source = gettext_noop("exit status of each rank from the launcher, OOM kills from the container runtime")

    def evaluate(self, name, type_name, options, outcome):
        result = outcome.result
        codes = {str(r): result.exit_codes.get(str(r)) for r in range(outcome.ranks)}
        passed = all(code == 0 for code in codes.values()) and not result.oom_killed
        measured = ", ".join(f"rank {r}: {'none' if c is None else c}" for r, c in codes.items())
        if result.oom_killed:
            measured = text(gettext_noop("%(codes)s (out of memory)"), codes=measured)
        return CheckResult(name, type_name, passed, measured, text(gettext_noop("every rank exits 0")))


class Metric(CheckType):
    """A value the lab's grader measured in its own container (held-out loss, accuracy, max error…)."""

    required = {"metric": "string", "op": "op", "value": "number"}
    source = gettext_noop("the lab's grader, in its own container, on the saved output and held-out data")

    def evaluate(self, name, type_name, options, outcome):
        metric, op, target = options["metric"], options["op"], float(options["value"])
        threshold = f"{metric} {op} {_fmt(target)}"
        if metric not in outcome.metrics:
            reason = outcome.grader_error or text(gettext_noop("the grader did not report it"))
            return CheckResult(name, type_name, False, text(NOT_MEASURED), threshold, reason)
        value = float(outcome.metrics[metric])
        passed = math.isfinite(value) and OPS[op](value, target)
        return CheckResult(name, type_name, passed, _fmt(value), threshold, margin=margin(value, op, target))


class MemoryGrowth(CheckType):
    """How far the memory sampled outside the ranks rose after warm-up, in MiB, and how high it stayed.

    ``growth = highest level held after warm-up − level at warm-up`` (the level: the median of the first three
    samples past it). Three choices close whole classes of cover-up:

    - an *amount*, not a rate. A leak grows by what each step keeps (a graph per validation pass, a tensor
      per batch), so a program that sleeps between steps keeps the same memory, only later; a MiB/s limit
      let it through, an MiB limit does not. A healthy program's memory levels off, and no wait raises it.
    - the *highest* level, not the last or a fitted line: a cache freed just before exit still peaked. The
      level must hold for ``SUSTAIN`` samples in a row (1-1.5 s): the allocator's transients (a buffer kept for
      a moment after it was freed) come and go within that, a leak stays until it is freed.
    - a *ceiling* from the reference fix on the same seed: the highest held level may exceed the reference's
      by at most ``max_over_reference_mib``. Growth alone is blind to memory reserved before warm-up and
      given back as the leak grows (a leak of 50 MiB an epoch hidden behind eight 60 MiB buffers, one freed
      per epoch, looks flat); the reference holds only what the program needs, so such a reserve shows as a
      level far above it. ``labs.reference`` measures the reference fix once per seed and keeps it.

    Warm-up is counted in CPU seconds the ranks (under Docker, the whole container) used since the first
    sample, not in wall seconds: on a loaded machine importing torch and building the data takes longer by
    the clock but not by the CPU, so warm-up ends at the same point of the program's work however busy the
    worker is. Sleeping does not advance that clock and burning CPU only ends warm-up sooner, so neither
    moves more of a leak into it. Where a run has no CPU samples, the wall clock stands in (said in the detail).
    """

    required = {"max_growth_mib": "number"}
    optional = {"warmup_cpu_s": "number", "min_samples": "number", "max_over_reference_mib": "number"}
    source = gettext_noop("memory sampled outside the ranks, against the reference fix's on the same seed")
    DEFAULT_WARMUP_CPU_S = 3
    DEFAULT_OVER_REFERENCE_MIB = 32

    @classmethod
    def warmup_cpu_s(cls, options: dict) -> float:
        """The CPU seconds of warm-up ``options`` ask for: where the check, and the reference's level, start."""
        return float(options.get("warmup_cpu_s", cls.DEFAULT_WARMUP_CPU_S))

    def evaluate(self, name, type_name, options, outcome):
        limit = float(options["max_growth_mib"])
        warmup = self.warmup_cpu_s(options)
        need = int(options.get("min_samples", 6))
        over = float(options.get("max_over_reference_mib", self.DEFAULT_OVER_REFERENCE_MIB))
        reference = outcome.reference_memory.get(name)
        ceiling = None if reference is None else reference + over
        threshold = text(
            gettext_noop("≤ %(growth)s MiB after %(warmup)s CPU s (no reference level on this seed)"),
            growth=_fmt(limit), warmup=_fmt(warmup),
        ) if ceiling is None else text(
            gettext_noop("≤ %(growth)s MiB after %(warmup)s CPU s, held ≤ %(ceiling)s MiB (the reference fix's "
                         "%(reference)s + %(over)s)"),
            growth=_fmt(limit), warmup=_fmt(warmup), ceiling=_fmt(ceiling), reference=_fmt(reference), over=_fmt(over),
        )  # fmt: skip
        if not outcome.result.memory:
            return CheckResult(name, type_name, False, text(gettext_noop("no samples")), threshold)
        points = post_warmup_mib(outcome.result, warmup)
        if len(points) < need:
            return CheckResult(
                name, type_name, False, text(gettext_noop("%(count)s samples"), count=len(points)), threshold,
                text(gettext_noop("the program must run at least %(need)s samples past warm-up to measure its memory"),
                     need=need),
            )  # fmt: skip
        level = sorted(points[:3])[len(points[:3]) // 2]
        peak = sustained_peak(points)
        growth = max(0.0, peak - level)
        detail = text(
            gettext_noop("from %(level)s MiB after %(warmup)s CPU s to a peak of %(peak)s MiB over %(count)s samples")
            if outcome.result.cpu else
            gettext_noop("from %(level)s MiB after %(warmup)s s by the wall clock (the run had no CPU samples) to a "
                         "peak of %(peak)s MiB over %(count)s samples"),
            level=_fmt(level), warmup=_fmt(warmup), peak=_fmt(peak), count=len(points),
        )  # fmt: skip
        passed, margins = growth <= limit, [margin(growth, "<=", limit)]
        measured = text(gettext_noop("%(growth)s MiB"), growth=_fmt(growth))
        if ceiling is not None:
            margins.append(margin(peak, "<=", ceiling))
            if peak > ceiling:
                passed = False
                measured = text(
                    gettext_noop("held %(peak)s MiB, %(above)s MiB above the reference fix"),
                    peak=_fmt(peak), above=_fmt(peak - reference),
                )  # fmt: skip
        known = [m for m in margins if m is not None]
        return CheckResult(name, type_name, passed, measured, threshold, detail, margin=min(known) if known else None)


def post_warmup_mib(result: RunResult, warmup_cpu_s: float) -> list[float]:
    """The memory samples (MiB) from the end of warm-up on: what a memory check judges."""
    start = warmup_end(result, warmup_cpu_s)
    return [] if start is None else [b / MIB for t, b in result.memory if t >= start]


def held_level(result: RunResult, warmup_cpu_s: float) -> float | None:
    """The highest level the memory held after warm-up (None without samples past it)."""
    points = post_warmup_mib(result, warmup_cpu_s) if result.memory else []
    return sustained_peak(points) if points else None


SUSTAIN = 3


def sustained_peak(points: list[float]) -> float:
    """The highest level the samples held for ``SUSTAIN`` samples in a row (the highest sample if fewer)."""
    if len(points) < SUSTAIN:
        return max(points)
    return max(min(points[i : i + SUSTAIN]) for i in range(len(points) - SUSTAIN + 1))


def warmup_end(result: RunResult, cpu_seconds: float) -> float | None:
    """When the run had used ``cpu_seconds`` of CPU since its first sample (None: never); without CPU
    samples, that many seconds after the first memory sample."""
    if not result.cpu:
        return result.memory[0][0] + cpu_seconds
    first = result.cpu[0][1]
    return next((t for t, used in result.cpu if used - first >= cpu_seconds), None)


class Speedup(CheckType):
    """Wall time against the faulty program's, measured when the lab was validated on this platform."""

    required = {"min_ratio": "number"}
    optional = {"baseline_seconds": "number"}
    source = gettext_noop("wall time kept outside the program, against the faulty program's measured at validation")

    def evaluate(self, name, type_name, options, outcome):
        result = outcome.result
        ratio_needed = float(options["min_ratio"])
        baseline = outcome.baseline.get("duration") or options.get("baseline_seconds")
        threshold = text(gettext_noop("≥ %(ratio)s× faster than the faulty program"), ratio=_fmt(ratio_needed))
        if not baseline or result.duration is None or result.timed_out:
            reason = text(gettext_noop("no finished run or no baseline"))
            return CheckResult(name, type_name, False, text(NOT_MEASURED), threshold, reason)
        ratio = float(baseline) / max(result.duration, 1e-6)
        detail = text(
            gettext_noop("faulty baseline %(baseline)s s, this run %(duration)s s"),
            baseline=_fmt(float(baseline)), duration=_fmt(result.duration),
        )  # fmt: skip
        return CheckResult(
            name, type_name, ratio >= ratio_needed, f"{_fmt(ratio)}×", threshold, detail,
            margin=margin(ratio, ">=", ratio_needed),
        )  # fmt: skip


class LossFinite(CheckType):
    """Display only: the losses the program reported. Hiding a NaN from the report is one line of code."""

    optional = {"min_reports": "number"}
    display_only = True
    source = REPORTED_BY_PROGRAM

    def evaluate(self, name, type_name, options, outcome):
        losses = outcome.reported.losses
        need = int(options.get("min_reports", 1))
        bad = [v for v in losses if not math.isfinite(v)]
        passed = not bad and len(losses) >= need
        measured = text(gettext_noop("%(count)s losses reported, %(bad)s not finite"), count=len(losses), bad=len(bad))
        threshold = text(gettext_noop("≥ %(need)s reported, all finite"), need=need)
        return CheckResult(name, type_name, passed, measured, threshold)


class Counter(CheckType):
    """Display only: a count the rank runtime sent (e.g. optimizer_steps), summed over ranks. It runs inside
    the program's process, so the program can forge or inflate it."""

    required = {"counter": "string", "op": "op", "value": "number"}
    display_only = True
    source = REPORTED_BY_PROGRAM

    def evaluate(self, name, type_name, options, outcome):
        counter, op, target = options["counter"], options["op"], float(options["value"])
        value = outcome.reported.counters.get(counter)
        threshold = f"{counter} {op} {_fmt(target)}"
        if value is None:
            return CheckResult(name, type_name, False, text(gettext_noop("never counted")), threshold)
        passed = OPS[op](value, target)
        return CheckResult(name, type_name, passed, _fmt(value), threshold, margin=margin(value, op, target))


class StoreReads(CheckType):
    """What the record store in the launcher served the run: ``reads`` completed, different ``records``
    among them, or ``records_in_children``: different records served only to processes a rank started (its
    workers), never to a rank's own process, as the kernel's peer credentials say. The ranks can only raise
    any of them by making the reads, each at the store's latency and within its concurrency cap; records a
    program builds itself are not counted."""

    required = {"op": "op", "value": "number"}
    optional = {"count": "string"}
    source = gettext_noop("reads counted by the record store in the launcher, outside the ranks")
    COUNTS = ("reads", "records", "records_in_children")

    def validate(self, options):
        problem = super().validate(options)
        if not problem and options.get("count", "reads") not in self.COUNTS:
            problem = f"count must be one of {', '.join(self.COUNTS)}, got {options['count']!r}"
        return problem

    def evaluate(self, name, type_name, options, outcome):
        count = options.get("count", "reads")
        op, target = options["op"], float(options["value"])
        threshold = f"store {count} {op} {_fmt(target)}"
        value = outcome.result.service_counts.get("record_store", {}).get(count)
        if value is None:
            reason = text(gettext_noop("the run had no record store"))
            return CheckResult(name, type_name, False, text(NOT_MEASURED), threshold, reason)
        passed = OPS[op](value, target)
        return CheckResult(name, type_name, passed, str(value), threshold, margin=margin(value, op, target))


class ServiceCount(CheckType):
    """A count a service in the launcher kept (``services:``), e.g. the checkpoint store's ``saves``,
    ``min_rank_loads`` (the fewest loads any one rank made, each rank known by the kernel's peer credentials
    of its connection) or ``max_load_delay_ms`` (how long after a checkpoint was complete a rank first loaded
    it). The ranks reach the service only through its socket and cannot write its counts."""

    required = {"service": "string", "count": "string", "op": "op", "value": "number"}
    source = gettext_noop("counted by a service in the launcher, outside the ranks")

    def evaluate(self, name, type_name, options, outcome):
        service, count = options["service"], options["count"]
        op, target = options["op"], float(options["value"])
        threshold = f"{service} {count} {op} {_fmt(target)}"
        value = outcome.result.service_counts.get(service, {}).get(count)
        if value is None:
            reason = text(gettext_noop("the run had no such service count"))
            return CheckResult(name, type_name, False, text(NOT_MEASURED), threshold, reason)
        passed = OPS[op](value, target)
        return CheckResult(name, type_name, passed, str(value), threshold, margin=margin(value, op, target))


CHECK_TYPES: dict[str, CheckType] = {
    "finished_in_time": FinishedInTime(),
    "ranks_exit_zero": RanksExitZero(),
    "metric": Metric(),
    "memory_growth": MemoryGrowth(),
    "speedup": Speedup(),
    "loss_finite": LossFinite(),
    "counter": Counter(),
    "store_reads": StoreReads(),
    "service_count": ServiceCount(),
}
DISPLAY_TYPES = frozenset(name for name, kind in CHECK_TYPES.items() if kind.display_only)


def run_checks(checks: list[dict], outcome: Outcome) -> list[CheckResult]:
    """``checks``: ``{name, type, options, gate?}`` with every option already rendered for the variant."""
    results = []
    for check in checks:
        kind = CHECK_TYPES[check["type"]]
        result = kind.evaluate(check["name"], check["type"], check["options"], outcome)
        result.source = kind.source
        result.gate = bool(check.get("gate", False)) and not kind.display_only
        results.append(result)
    return results


def localized(check: dict) -> dict:
    """A stored check result with its texts in the active language (stored English where no template)."""
    shown = dict(check)
    for key, entry in (check.get("texts") or {}).items():
        try:
            shown[key] = gettext(entry["msgid"]) % entry["values"] if entry["values"] else gettext(entry["msgid"])
        except (KeyError, TypeError, ValueError):
            pass  # a template changed since this result was stored: keep the stored English
    return shown

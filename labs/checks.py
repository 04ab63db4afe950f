"""Named check types that grade a fix by what was measured outside the candidate's code.

A lab lists its checks as data (``checks:`` in lab.yaml); each type validates its
options when the lab is loaded and, when grading, reports the measured value next to
the threshold so the candidate sees exactly why a check passed or failed.
"""

from __future__ import annotations

import math
import operator
from dataclasses import asdict, dataclass, field

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq}
MIB = 1024 * 1024


@dataclass
class Outcome:
    """Everything a check may look at, gathered after the run ended."""

    ranks: int
    exit_codes: dict[str, int | None]
    timed_out: bool
    oom_killed: bool
    duration: float | None
    timeout_seconds: int
    losses: list[float] = field(default_factory=list)
    memory: list[tuple[float, float]] = field(default_factory=list)  # (t, bytes summed over ranks)
    counters: dict[str, float] = field(default_factory=dict)  # summed over ranks
    metrics: dict[str, float] = field(default_factory=dict)  # from the grader process
    grader_error: str = ""
    baseline: dict = field(default_factory=dict)  # measured on the faulty program when the lab was validated


@dataclass
class CheckResult:
    name: str
    type: str
    passed: bool
    measured: str
    threshold: str
    detail: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fmt(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"


class CheckType:
    required: dict[str, str] = {}  # option → "number" | "string" | "op"
    optional: dict[str, str] = {}

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

    def evaluate(self, name, type_name, options, outcome):
        limit = float(options.get("max_seconds", outcome.timeout_seconds))
        duration = outcome.duration if outcome.duration is not None else math.inf
        passed = not outcome.timed_out and duration <= limit
        measured = "killed at the deadline" if outcome.timed_out else f"{_fmt(duration)} s"
        return CheckResult(name, type_name, passed, measured, f"≤ {_fmt(limit)} s")


class RanksExitZero(CheckType):
    def evaluate(self, name, type_name, options, outcome):
        codes = {str(r): outcome.exit_codes.get(str(r)) for r in range(outcome.ranks)}
        passed = all(code == 0 for code in codes.values()) and not outcome.oom_killed
        measured = ", ".join(f"rank {r}: {'none' if c is None else c}" for r, c in codes.items())
        if outcome.oom_killed:
            measured += " (out of memory)"
        return CheckResult(name, type_name, passed, measured, "every rank exits 0")


class LossFinite(CheckType):
    optional = {"min_reports": "number"}

    def evaluate(self, name, type_name, options, outcome):
        need = int(options.get("min_reports", 1))
        bad = [v for v in outcome.losses if not math.isfinite(v)]
        passed = not bad and len(outcome.losses) >= need
        measured = f"{len(outcome.losses)} losses reported, {len(bad)} not finite"
        return CheckResult(name, type_name, passed, measured, f"≥ {need} reported, all finite")


class Metric(CheckType):
    """A value the lab's grader measured in a fresh process (held-out loss, accuracy, max error…)."""

    required = {"metric": "string", "op": "op", "value": "number"}

    def evaluate(self, name, type_name, options, outcome):
        metric, op, target = options["metric"], options["op"], float(options["value"])
        threshold = f"{metric} {op} {_fmt(target)}"
        if metric not in outcome.metrics:
            reason = outcome.grader_error or "the grader did not report it"
            return CheckResult(name, type_name, False, "not measured", threshold, reason)
        value = float(outcome.metrics[metric])
        passed = math.isfinite(value) and OPS[op](value, target)
        return CheckResult(name, type_name, passed, _fmt(value), threshold)


class MemorySlope(CheckType):
    """Growth of the memory of every rank's process tree after warm-up (least-squares fit)."""

    required = {"max_mib_per_s": "number"}
    optional = {"warmup_s": "number", "min_samples": "number"}

    def evaluate(self, name, type_name, options, outcome):
        limit = float(options["max_mib_per_s"])
        warmup = float(options.get("warmup_s", 3))
        need = int(options.get("min_samples", 6))
        if not outcome.memory:
            return CheckResult(name, type_name, False, "no samples", f"≤ {_fmt(limit)} MiB/s")
        start = outcome.memory[0][0] + warmup
        points = [(t, b / MIB) for t, b in outcome.memory if t >= start]
        threshold = f"≤ {_fmt(limit)} MiB/s after {_fmt(warmup)} s"
        if len(points) < need:
            return CheckResult(
                name, type_name, False, f"{len(points)} samples", threshold,
                f"the program must run at least {need} samples past warm-up to measure its memory",
            )  # fmt: skip
        slope = least_squares_slope(points)
        return CheckResult(name, type_name, slope <= limit, f"{_fmt(slope)} MiB/s", threshold)


def least_squares_slope(points: list[tuple[float, float]]) -> float:
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / var


class Speedup(CheckType):
    """Wall time against the faulty program's, measured when the lab was validated on this platform."""

    required = {"min_ratio": "number"}
    optional = {"baseline_seconds": "number"}

    def evaluate(self, name, type_name, options, outcome):
        ratio_needed = float(options["min_ratio"])
        baseline = outcome.baseline.get("duration") or options.get("baseline_seconds")
        threshold = f"≥ {_fmt(ratio_needed)}× faster than the faulty program"
        if not baseline or outcome.duration is None or outcome.timed_out:
            return CheckResult(name, type_name, False, "not measured", threshold, "no finished run or no baseline")
        ratio = float(baseline) / max(outcome.duration, 1e-6)
        detail = f"faulty baseline {_fmt(float(baseline))} s, this run {_fmt(outcome.duration)} s"
        return CheckResult(name, type_name, ratio >= ratio_needed, f"{_fmt(ratio)}×", threshold, detail)


class Counter(CheckType):
    """A count kept by the harness inside the rank (e.g. optimizer_steps), summed over ranks."""

    required = {"counter": "string", "op": "op", "value": "number"}

    def evaluate(self, name, type_name, options, outcome):
        counter, op, target = options["counter"], options["op"], float(options["value"])
        value = outcome.counters.get(counter)
        threshold = f"{counter} {op} {_fmt(target)}"
        if value is None:
            return CheckResult(name, type_name, False, "never counted", threshold)
        return CheckResult(name, type_name, OPS[op](value, target), _fmt(value), threshold)


CHECK_TYPES: dict[str, CheckType] = {
    "finished_in_time": FinishedInTime(),
    "ranks_exit_zero": RanksExitZero(),
    "loss_finite": LossFinite(),
    "metric": Metric(),
    "memory_slope": MemorySlope(),
    "speedup": Speedup(),
    "counter": Counter(),
}


def run_checks(checks: list[dict], outcome: Outcome, values: dict) -> list[CheckResult]:
    from labs.render import render_option

    results = []
    for check in checks:
        options = {key: render_option(value, values) for key, value in check["options"].items()}
        results.append(CHECK_TYPES[check["type"]].evaluate(check["name"], check["type"], options, outcome))
    return results

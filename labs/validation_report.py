"""What a validation measured, summed up for people: how far each check sat from its threshold, and one
line per lab for the README.

A check the reference passes by 2 % or the faulty program misses by 2 % is one busy machine away from a
wrong verdict; the margins make that visible before it happens on a candidate's run.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.validation import ValidationRow


@dataclass
class CheckMargin:
    check: str
    reference_min: float | None  # the solution's tightest seed (positive: passed with room)
    faulty_max: float | None  # the faulty program's closest seed to passing (negative: failed with room)
    coverup_max: float | None  # the closest any cover-up came, on any seed


def check_margins(rows: list[ValidationRow]) -> list[CheckMargin]:
    """Per counting check of one lab: the worst reference margin and the best faulty and cover-up margins.
    A check a run did not measure (a crash, a timeout) has no margin on that run and is left out of it."""
    names: list[str] = []
    for row in rows:
        names += [name for name in row.margins if name not in names]
    reference = [r for r in rows if r.variant == "solution"]
    faulty = [r for r in rows if r.variant == "baseline"]
    coverups = [r for r in rows if r.variant.startswith("bad:")]
    return [
        CheckMargin(name, _pick(min, reference, name), _pick(max, faulty, name), _pick(max, coverups, name))
        for name in names
    ]


def _pick(kind, rows: list[ValidationRow], name: str) -> float | None:
    values = [m for row in rows if (m := row.margins.get(name)) is not None]
    return kind(values) if values else None


def format_margin(value: float | None) -> str:
    """Percent of the threshold; thousands of percent (a threshold near 0) in exponent form to stay short."""
    if value is None:
        return "—"
    return f"{value:+.1%}" if abs(value) < 10 else f"{value * 100:+.1e}%"


def margin_lines(rows: list[ValidationRow]) -> list[str]:
    """The margin table of one lab's validation, for a terminal."""
    lines = [f"  {'check':28} {'reference min':>14} {'faulty max':>11} {'cover-up max':>13}"]
    for m in check_margins(rows):
        lines.append(
            f"  {m.check:28} {format_margin(m.reference_min):>14} {format_margin(m.faulty_max):>11} "
            f"{format_margin(m.coverup_max):>13}"
        )
    return lines


def summary_markdown(rows: list[ValidationRow], seeds: int) -> str:
    """The README's validation table: per lab its cover-ups, the checks the faulty program failed on every
    seed, the solution's time, its tightest check and the violations. Written from the rows, never by hand."""
    out = [
        f"| lab | cover-ups (each must score 0 % on seeds 0–{seeds - 1}) | faulty program fails | "
        "solution, run + grading | tightest reference margin | closest cover-up | violations |",
        "|---|---|---|---|---|---|---|",
    ]
    for lab in sorted({r.lab for r in rows}):
        mine = [r for r in rows if r.lab == lab]
        coverups = sorted({r.variant.removeprefix("bad:") for r in mine if r.variant.startswith("bad:")})
        baselines = [set(r.failed_checks) for r in mine if r.variant == "baseline"]
        fails = sorted(set.intersection(*baselines)) if baselines else []
        seconds = [r.seconds for r in mine if r.variant == "solution"]
        took = f"{min(seconds):.0f}–{max(seconds):.0f} s" if seconds else "—"
        margins = check_margins(mine)
        tight = min((m for m in margins if m.reference_min is not None), key=lambda m: m.reference_min, default=None)
        close = max((m for m in margins if m.coverup_max is not None), key=lambda m: m.coverup_max, default=None)
        bad = sum(1 for r in mine if not r.ok)
        out.append(
            f"| `{lab}` | {', '.join(f'`{c}`' for c in coverups) or '—'} | {', '.join(fails) or '—'} | {took} | "
            f"{_named(tight, tight.reference_min if tight else None)} | "
            f"{_named(close, close.coverup_max if close else None)} | {bad} |"
        )
    labs = len({r.lab for r in rows})
    out += ["", f"{labs} labs, {len(rows)} runs, {sum(1 for r in rows if not r.ok)} violation(s)."]
    return "\n".join(out)


def _named(margin: CheckMargin | None, value: float | None) -> str:
    return f"{margin.check} {format_margin(value)}" if margin else "—"

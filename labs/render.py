"""Seeded variants: one seed picks the parameters, the parameters render the program.

The same lab version and seed always give byte-identical files, so an attempt can be
rebuilt at any time from (version, seed). Hidden grading files may also use the probe
seed, which is derived from the same public seed: it is public by design, and nothing the
grader keeps secret comes from it. The grader's held-out seed never reaches any file
(``labs.grading`` draws it for every grading).
"""

from __future__ import annotations

import hashlib
import random

from labs import derived
from labs.spec import PLACEHOLDER_RE, Param


def choose_params(slug: str, params: list[Param] | list[dict], seed: int) -> dict:
    rng = random.Random(f"{slug}/{seed}")
    chosen = {}
    for param in params:
        if isinstance(param, dict):
            param = Param(**param)
        if param.kind == "derived":  # computed, so it draws nothing and the drawn parameters stay as they were
            chosen[param.name] = derived.evaluate(param.expr, chosen)
        elif param.kind == "choice":
            chosen[param.name] = rng.choice(param.choices)
        elif param.kind == "int":
            chosen[param.name] = rng.randint(int(param.low), int(param.high))
        else:
            chosen[param.name] = round(rng.uniform(param.low, param.high), param.digits)
    return chosen


def probe_seed(slug: str, seed: int) -> int:
    """The seed of the data a hidden probe feeds the candidate's code, a function of the public seed only."""
    digest = hashlib.sha256(f"probe/{slug}/{seed}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1  # 31 bits: fits every RNG the labs use, with room to add


def variant_values(spec: dict, seed: int) -> dict:
    """The variant's parameters and its probe seed: everything a hidden file or a service setting may quote."""
    return {**choose_params(spec["slug"], spec["params"], seed), "probe_seed": probe_seed(spec["slug"], seed)}


def render_text(text: str, values: dict) -> str:
    return PLACEHOLDER_RE.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text)


def render_files(files: dict[str, str], values: dict) -> dict[str, str]:
    return {path: render_text(text, values) for path, text in files.items()}


def render_option(value, values: dict):
    """A check threshold may be a placeholder, e.g. ``value: "{{ steps }}"``."""
    if isinstance(value, str) and PLACEHOLDER_RE.fullmatch(value.strip()):
        return values[PLACEHOLDER_RE.fullmatch(value.strip()).group(1)]
    if isinstance(value, str):
        return render_text(value, values)
    return value


def render_check(check: dict, values: dict) -> dict:
    """A check of a stored spec with its options filled in for one variant."""
    options = {key: render_option(value, values) for key, value in check["options"].items()}
    return {**check, "options": options}

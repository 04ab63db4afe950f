"""Parse and validate a lab folder (docs/lab-format.md) without a database.

A lab is a folder ``labs/catalog/<slug>/`` holding ``lab.yaml``, the faulty program's
templates under ``program/``, the reference fix under ``solution/``, known cover-ups
under ``bad_fixes/<name>/``, files added only when grading under ``hidden/`` (all three as whole
files or as ``X.patch`` diffs against ``program/X``), and an
optional ``grader.py`` that the platform runs outside the candidate's process.
Every error names the file, the field and what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from labs import derived, patches
from labs.checks import CHECK_TYPES
from sandbox.harness.faultline_harness import recordstore
from sandbox.harness.faultline_harness.protocol import ENV_SERVICES

CATALOG_DIR = Path(__file__).resolve().parent / "catalog"
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
KEY_RE = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$")
PARAM_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
FAMILIES = ("nan", "leak", "hang", "perf", "correctness")
GPU_MODES = ("none", "optional", "required")
TOOLS = ("stacks", "memory", "detect_anomaly", "tracemalloc", "distributed_debug", "faulthandler_timeout", "nccl_debug")
LANGS = ("en", "zh")
MAX_PROGRAM_FILES = 12
# Hidden files may use the probe seed (derived from the attempt's public seed, so it carries nothing about
# the grader's held-out data); the candidate's own files never need it.
HIDDEN_ONLY_PARAMS = ("probe_seed",)
# The grader's held-out seed reaches no file at all: it exists only in the grader's container.
REMOVED_PARAMS = {
    "grader_seed": (
        "{{ grader_seed }} was removed: nothing a run's container can read may come from the grader's "
        "held-out seed. Use {{ probe_seed }} for data the grader must re-derive (ctx.probe_seed), and make "
        "held-out data in grader.py from ctx.seed"
    ),
}
RESERVED_PARAMS = (*HIDDEN_ONLY_PARAMS, *REMOVED_PARAMS)


class LabSpecError(ValueError):
    """A lab folder is malformed; the message names the file, the field and the problem."""

    def __init__(self, path: Path | str, where: str, problem: str) -> None:
        self.path, self.where, self.problem = str(path), where, problem
        super().__init__(f"{path}: {where}: {problem}")


@dataclass
class Param:
    name: str
    kind: str  # choice | int | float | derived
    choices: list = field(default_factory=list)
    low: float = 0
    high: float = 0
    digits: int = 3
    expr: str = ""  # derived: arithmetic over earlier parameters (labs.derived)

    def as_json(self) -> dict:
        data = asdict(self)
        if not self.expr:
            data.pop("expr")  # so labs without derived parameters keep their content hash
        return data


@dataclass
class Check:
    name: str
    type: str
    options: dict
    gate: bool = False  # failing it makes the fix score 0 %, whatever else passed


@dataclass
class LabSpec:
    slug: str
    family: str
    difficulty: int
    title: dict[str, str]
    briefing: dict[str, str]
    questions: list[str]
    resources: dict
    entry: str
    params: list[Param]
    checks: list[Check]
    hints: list[dict]
    diagnosis: dict
    tools: list[str]
    static_flags: list[dict]
    bad_fix_notes: dict[str, dict[str, str]]
    program: dict[str, str]
    solution: dict[str, str]
    bad_fixes: dict[str, dict[str, str]]
    hidden: dict[str, str]
    grader_source: str
    grade_entry: str
    path: str = ""
    # Services the launcher runs outside the ranks (``services:``); left out of the stored spec when none,
    # so labs without services keep their content hash.
    services: dict = field(default_factory=dict)

    def content_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.as_json(), sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def as_json(self) -> dict:
        data = asdict(self)
        data.pop("path")
        data["params"] = [param.as_json() for param in self.params]
        if not data["services"]:
            data.pop("services")
        return data


def services_env(spec: dict, values: dict | None = None, graded: bool = False) -> dict[str, str]:
    """Environment for every run of a lab (stored spec as a dict): the launcher starts the services it names.

    ``values`` are the variant's parameters (a setting may be a ``{{ param }}`` placeholder); ``graded``
    applies each service's ``graded:`` settings, which only a graded run gets. The platform sets these when
    it creates the run: nothing in the program's files can change them."""
    services = spec.get("services")
    if not services:
        return {}
    return {ENV_SERVICES: json.dumps(render_services(services, values or {}, graded), sort_keys=True)}


def render_services(services: dict, values: dict, graded: bool) -> dict:
    """The launcher's service settings for one variant: placeholders filled, ``graded:`` applied or dropped."""
    rendered = {}
    for name, options in services.items():
        chosen = {key: value for key, value in options.items() if key != "graded"}
        if graded:
            chosen.update(options.get("graded") or {})
        rendered[name] = {key: _service_value(value, values) for key, value in chosen.items()}
    return rendered


def _service_value(value, values: dict):
    if isinstance(value, str):
        match = PLACEHOLDER_RE.fullmatch(value.strip())
        if match and match.group(1) in values:
            return values[match.group(1)]
    return value


def _param_extremes(params: list[Param]) -> list[dict]:
    """Two variants that between them hold every parameter's lowest and highest value."""

    def ends(param: Param) -> tuple:
        if param.kind != "choice":
            return param.low, param.high
        numeric = all(isinstance(c, int | float) and not isinstance(c, bool) for c in param.choices)
        return (min(param.choices), max(param.choices)) if numeric else (param.choices[0], param.choices[-1])

    variants = []
    for side in (0, 1):
        values: dict = {}
        for param in params:
            # A derived value follows from the others; its own extremes are not searched for.
            values[param.name] = derived.evaluate(param.expr, values) if param.kind == "derived" else ends(param)[side]
        variants.append(values)
    return variants


def load_lab(folder: Path) -> LabSpec:
    folder = Path(folder)
    yaml_path = folder / "lab.yaml"
    if not yaml_path.is_file():
        raise LabSpecError(folder, "lab.yaml", "missing")
    try:
        meta = yaml.load(yaml_path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "yaml"
        raise LabSpecError(yaml_path, where, f"not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(meta, dict):
        raise LabSpecError(yaml_path, "top level", "must be a mapping of fields")
    return _Parser(folder, yaml_path, meta).parse()


def load_catalog(root: Path = CATALOG_DIR) -> list[LabSpec]:
    """Every lab under ``root``; all errors are collected so an author sees them at once."""
    specs, errors = [], []
    for folder in sorted(p for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        try:
            specs.append(load_lab(folder))
        except LabSpecError as exc:
            errors.append(exc)
    if errors:
        raise LabCatalogError(errors)
    return specs


class LabCatalogError(ValueError):
    def __init__(self, errors: list[LabSpecError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class _Parser:
    def __init__(self, folder: Path, yaml_path: Path, meta: dict) -> None:
        self.folder, self.yaml_path, self.meta = folder, yaml_path, meta

    def fail(self, where: str, problem: str):
        raise LabSpecError(self.yaml_path, where, problem)

    def parse(self) -> LabSpec:
        known = {
            "slug", "family", "difficulty", "title", "briefing", "questions", "resources", "entry", "params",
            "checks", "hints", "diagnosis", "tools", "static_flags", "bad_fixes", "grade_entry", "services",
        }  # fmt: skip
        unknown = sorted(set(self.meta) - known)
        if unknown:
            self.fail(unknown[0], f"unknown field (known: {', '.join(sorted(known))})")
        slug = self.meta.get("slug")
        if not isinstance(slug, str) or not SLUG_RE.match(slug):
            self.fail("slug", f"must be lowercase words joined by '-', got {slug!r}")
        if slug != self.folder.name:
            self.fail("slug", f"{slug!r} must equal the folder name {self.folder.name!r}")
        family = self.meta.get("family")
        if family not in FAMILIES:
            self.fail("family", f"one of {', '.join(FAMILIES)}, got {family!r}")
        difficulty = self.meta.get("difficulty")
        if not isinstance(difficulty, int) or isinstance(difficulty, bool) or not 1 <= difficulty <= 5:
            self.fail("difficulty", f"an integer 1–5, got {difficulty!r}")
        program = self.read_tree("program", required=True)
        entry = self.meta.get("entry", "main.py")
        if entry not in program:
            self.fail("entry", f"{entry!r} is not a file under program/ (found: {', '.join(sorted(program))})")
        solution = self.read_tree("solution", required=True, base=program)
        hidden = self.read_tree("hidden", required=False, base=program)
        grade_entry = self.meta.get("grade_entry", entry)
        if grade_entry not in program and grade_entry not in hidden:
            self.fail("grade_entry", f"{grade_entry!r} is neither under program/ nor under hidden/")
        params = self.parse_params()
        bad_fix_notes = self.parse_bad_fix_notes()
        bad_fixes = {name: self.read_tree(f"bad_fixes/{name}", required=True, base=program) for name in bad_fix_notes}
        on_disk = self.folder / "bad_fixes"
        if on_disk.is_dir():
            extra = sorted({p.name for p in on_disk.iterdir() if p.is_dir()} - set(bad_fix_notes))
            if extra:
                self.fail("bad_fixes", f"folder bad_fixes/{extra[0]} has no entry in lab.yaml")
        grader = self.folder / "grader.py"
        grader_source = grader.read_text(encoding="utf-8") if grader.is_file() else ""
        checks = self.parse_checks(has_grader=bool(grader_source))
        services = self.parse_services(checks, params)
        spec = LabSpec(
            slug=slug, family=family, difficulty=difficulty,
            title=self.bilingual("title"), briefing=self.bilingual("briefing"),
            questions=self.string_list("questions"), resources=self.parse_resources(program), entry=entry,
            params=params, checks=checks, hints=self.parse_hints(), diagnosis=self.parse_diagnosis(),
            tools=self.parse_tools(), static_flags=self.parse_static_flags(), bad_fix_notes=bad_fix_notes,
            program=program, solution=solution, bad_fixes=bad_fixes, hidden=hidden,
            grader_source=grader_source, grade_entry=grade_entry, path=str(self.folder), services=services,
        )  # fmt: skip
        self.check_placeholders(spec)
        return spec

    def read_tree(self, name: str, required: bool, base: dict[str, str] | None = None) -> dict[str, str]:
        """The text files under ``name``. With ``base`` (the program's files), ``X.patch`` is a unified diff
        against ``program/X`` and stands for the patched ``X`` (labs/patches.py)."""
        root = self.folder / name
        if not root.is_dir():
            if required:
                raise LabSpecError(root, name, "folder missing")
            return {}
        files = {}
        for path in sorted(root.rglob("*")):
            if "__pycache__" in path.parts:
                continue
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                raise LabSpecError(path, name, "symbolic links are not allowed in a lab")
            if not path.is_file():
                continue
            try:
                files[relative] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise LabSpecError(path, name, "not UTF-8 text") from None
        if base is not None:
            files = self.apply_patches(root, name, files, base)
        if required and not files:
            raise LabSpecError(root, name, "folder is empty")
        if len(files) > MAX_PROGRAM_FILES:
            raise LabSpecError(root, name, f"at most {MAX_PROGRAM_FILES} files, found {len(files)}")
        return files

    def apply_patches(self, root: Path, name: str, files: dict[str, str], base: dict[str, str]) -> dict[str, str]:
        result = {}
        for relative, text in files.items():
            if not relative.endswith(patches.SUFFIX):
                result[relative] = text
                continue
            target = relative.removesuffix(patches.SUFFIX)
            if target in files:
                raise LabSpecError(root / relative, name, f"both {target} and {relative}: keep one")
            if target not in base:
                raise LabSpecError(root / relative, name, f"patches program/{target}, which does not exist")
            try:
                result[target] = patches.apply_patch(base[target], text)
            except patches.PatchError as exc:
                raise LabSpecError(root / relative, name, f"does not apply to program/{target}: {exc}") from None
        return result

    def bilingual(self, key: str, value=None, where: str | None = None) -> dict[str, str]:
        value = self.meta.get(key) if value is None else value
        where = where or key
        if not isinstance(value, dict):
            self.fail(where, "must map en and zh to text")
        for lang in LANGS:
            text = value.get(lang)
            if not isinstance(text, str) or not text.strip():
                self.fail(f"{where}.{lang}", "missing or empty")
        return {lang: value[lang].strip() for lang in LANGS}

    def string_list(self, key: str) -> list[str]:
        value = self.meta.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(key, "must be a list of strings")
        return value

    def parse_resources(self, program: dict[str, str]) -> dict:
        raw = self.meta.get("resources") or {}
        if not isinstance(raw, dict):
            self.fail("resources", "must be a mapping")
        unknown = sorted(set(raw) - {"ranks", "cpus", "memory_mb", "timeout_seconds", "gpu"})
        if unknown:
            self.fail(f"resources.{unknown[0]}", "unknown field (ranks, cpus, memory_mb, timeout_seconds, gpu)")
        resources = {"ranks": 1, "cpus": 1.0, "memory_mb": 1024, "timeout_seconds": 60, "gpu": "none", **raw}
        bounds = {"ranks": (1, 8), "memory_mb": (128, 16384), "timeout_seconds": (5, 600)}
        for key, (low, high) in bounds.items():
            value = resources[key]
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                self.fail(f"resources.{key}", f"an integer {low}–{high}, got {value!r}")
        cpus = resources["cpus"]
        if not isinstance(cpus, (int, float)) or isinstance(cpus, bool) or not 0.1 <= cpus <= 64:
            self.fail("resources.cpus", f"a number 0.1–64, got {cpus!r}")
        resources["cpus"] = float(cpus)
        if resources["gpu"] not in GPU_MODES:
            self.fail("resources.gpu", f"one of {', '.join(GPU_MODES)}, got {resources['gpu']!r}")
        # A run of such a lab holds one of its worker's GPUs for its whole length: a program that never
        # asks for CUDA would keep it from another run and show the candidate a GPU doing nothing.
        if resources["gpu"] != "none" and not any("cuda" in text for text in program.values()):
            self.fail(
                "resources.gpu",
                f"{resources['gpu']!r} needs a program that uses CUDA when it is there, and no file under "
                "program/ mentions cuda: use gpu: none",
            )
        return resources

    def parse_params(self) -> list[Param]:
        raw = self.meta.get("params") or {}
        if not isinstance(raw, dict):
            self.fail("params", "must map parameter names to {choices: [...]} or {int: [lo, hi]} or {float: [lo, hi]}")
        params = []
        for name, rule in raw.items():
            where = f"params.{name}"
            if not isinstance(name, str) or not PARAM_RE.match(name) or name in RESERVED_PARAMS:
                self.fail(where, f"names are lowercase identifiers, and {', '.join(RESERVED_PARAMS)} are reserved")
            if not isinstance(rule, dict) or len(set(rule) & {"choices", "int", "float", "derived"}) != 1:
                self.fail(where, "give exactly one of choices, int, float or derived")
            if "derived" in rule:
                params.append(self.parse_derived(where, name, rule, params))
                continue
            if "choices" in rule:
                choices = rule["choices"]
                if not isinstance(choices, list) or not choices:
                    self.fail(f"{where}.choices", "must be a non-empty list")
                params.append(Param(name, "choice", choices=choices))
                continue
            kind = "int" if "int" in rule else "float"
            bounds = rule[kind]
            if (
                not isinstance(bounds, list)
                or len(bounds) != 2
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
                or bounds[0] > bounds[1]
                or (kind == "int" and not all(isinstance(b, int) for b in bounds))
            ):
                self.fail(f"{where}.{kind}", f"must be [low, high] with low <= high, got {bounds!r}")
            digits = rule.get("digits", 3)
            if not isinstance(digits, int) or not 0 <= digits <= 8:
                self.fail(f"{where}.digits", "an integer 0–8")
            params.append(Param(name, kind, low=bounds[0], high=bounds[1], digits=digits))
        return params

    def parse_derived(self, where: str, name: str, rule: dict, earlier: list[Param]) -> Param:
        """A parameter computed from earlier ones; tried on both extreme variants so that a division by zero
        or a string parameter in it is reported here, not when an attempt starts."""
        if set(rule) != {"derived"}:
            self.fail(where, 'a derived parameter takes only derived: "<expression>"')
        expression = rule["derived"]
        try:
            unknown = sorted(derived.names(expression) - {p.name for p in earlier})
            if unknown:
                raise derived.DerivedError(f"{unknown[0]!r} is not a parameter declared before {name!r}")
            for values in _param_extremes(earlier):
                derived.evaluate(expression, values)
        except derived.DerivedError as exc:
            self.fail(f"{where}.derived", str(exc))
        return Param(name, "derived", expr=expression.strip())

    def parse_checks(self, has_grader: bool) -> list[Check]:
        raw = self.meta.get("checks")
        if not isinstance(raw, list) or not raw:
            self.fail("checks", "must be a non-empty list")
        checks, names = [], set()
        for index, item in enumerate(raw):
            where = f"checks[{index}]"
            if not isinstance(item, dict):
                self.fail(where, "must be a mapping with name and type")
            name, kind = item.get("name"), item.get("type")
            if not isinstance(name, str) or not KEY_RE.match(name) or name in names:
                self.fail(f"{where}.name", f"a unique lowercase key, got {name!r}")
            names.add(name)
            if kind not in CHECK_TYPES:
                self.fail(f"{where}.type", f"one of {', '.join(sorted(CHECK_TYPES))}, got {kind!r}")
            gate = item.get("gate", False)
            if not isinstance(gate, bool):
                self.fail(f"{where} ({name}).gate", f"true or false, got {gate!r}")
            if gate and CHECK_TYPES[kind].display_only:
                self.fail(f"{where} ({name}).gate", f"a {kind} check is display only and cannot be a gate")
            options = {k: v for k, v in item.items() if k not in ("name", "type", "gate")}
            problem = CHECK_TYPES[kind].validate(options)
            if problem:
                self.fail(f"{where} ({name})", problem)
            if kind == "metric" and not has_grader:
                self.fail(f"{where} ({name})", "a metric check needs grader.py in the lab folder")
            checks.append(Check(name, kind, options, gate))
        return checks

    def parse_services(self, checks: list[Check], params: list[Param]) -> dict:
        """``services: {record_store: {latency_ms, concurrency, floats}, checkpoint_store: {mb_per_s}}``, checked
        by the launcher's own parser. A setting may be a ``{{ param }}`` placeholder, and ``graded:`` holds
        settings that replace others in graded runs; both are checked at the ends of every parameter's range."""
        raw = self.meta.get("services") or {}
        if not isinstance(raw, dict):
            self.fail("services", "must be a mapping of service names to their settings")
        for name, options in raw.items():
            if not isinstance(options, dict) or not isinstance(options.get("graded", {}), dict):
                self.fail(f"services.{name}", "must be a mapping of settings (graded: a mapping too)")
            for value in [*options.values(), *(options.get("graded") or {}).values()]:
                match = PLACEHOLDER_RE.fullmatch(value.strip()) if isinstance(value, str) else None
                if match and match.group(1) not in {p.name for p in params} | set(HIDDEN_ONLY_PARAMS):
                    self.fail(f"services.{name}", f"{{{{ {match.group(1)} }}}} is not a parameter of this lab")
        if raw:
            # The probe seed is a 31-bit number (labs.render.probe_seed); a setting may quote it, as the
            # hidden files do, to serve the shard a graded run's hidden client asks for.
            for values, probe in zip(_param_extremes(params), (0, 2**31 - 1), strict=True):
                values = {**values, "probe_seed": probe}
                for graded in (False, True):
                    try:
                        recordstore.parse_config(json.dumps(render_services(raw, values, graded)))
                    except recordstore.ServiceConfigError as exc:
                        where, _, problem = str(exc).partition(": ")
                        self.fail(where, problem)
        for check in checks:
            if check.type == "store_reads" and "record_store" not in raw:
                self.fail(f"checks ({check.name})", "a store_reads check needs services.record_store in lab.yaml")
            if check.type == "service_count" and check.options.get("service") not in raw:
                self.fail(f"checks ({check.name})", f"service {check.options.get('service')!r} is not in services:")
        return raw

    def parse_hints(self) -> list[dict]:
        raw = self.meta.get("hints") or []
        if not isinstance(raw, list):
            self.fail("hints", "must be a list")
        hints = []
        for index, item in enumerate(raw):
            where = f"hints[{index}]"
            if not isinstance(item, dict):
                self.fail(where, "must have cost, en and zh")
            cost = item.get("cost")
            if not isinstance(cost, int) or isinstance(cost, bool) or not 0 <= cost <= 50:
                self.fail(f"{where}.cost", f"an integer 0–50 (score points), got {cost!r}")
            hints.append({"cost": cost, **self.bilingual(where, item, where)})
        return hints

    def parse_diagnosis(self) -> dict:
        raw = self.meta.get("diagnosis")
        if not isinstance(raw, dict):
            self.fail("diagnosis", "must have options, correct and rubric")
        options = raw.get("options")
        if not isinstance(options, list) or len(options) < 2:
            self.fail("diagnosis.options", "at least two root-cause options")
        keys, parsed_options = set(), []
        for index, option in enumerate(options):
            where = f"diagnosis.options[{index}]"
            if (
                not isinstance(option, dict)
                or not isinstance(option.get("key"), str)
                or not KEY_RE.match(option["key"])
            ):
                self.fail(f"{where}.key", "a lowercase key")
            if option["key"] in keys:
                self.fail(f"{where}.key", f"{option['key']!r} appears twice")
            keys.add(option["key"])
            parsed_options.append({"key": option["key"], **self.bilingual(where, option, where)})
        if raw.get("correct") not in keys:
            self.fail("diagnosis.correct", f"must be one of the option keys ({', '.join(sorted(keys))})")
        rubric = raw.get("rubric")
        if not isinstance(rubric, list) or not rubric:
            self.fail("diagnosis.rubric", "at least one point")
        parsed_rubric = []
        for index, point in enumerate(rubric):
            where = f"diagnosis.rubric[{index}]"
            if not isinstance(point, dict) or not isinstance(point.get("key"), str):
                self.fail(f"{where}.key", "each point needs a key")
            weight = point.get("weight", 1)
            if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 10:
                self.fail(f"{where}.weight", "an integer 1–10")
            concepts = point.get("concepts")
            if (
                not isinstance(concepts, list)
                or not concepts
                or not all(
                    isinstance(c, list) and c and all(isinstance(s, str) and s.strip() for s in c) for c in concepts
                )
            ):
                self.fail(f"{where}.concepts", "a list of synonym lists, e.g. [[learning rate, lr, 学习率]]")
            parsed_rubric.append(
                {"key": point["key"], "weight": weight, "concepts": concepts, **self.bilingual(where, point, where)}
            )
        return {"options": parsed_options, "correct": raw["correct"], "rubric": parsed_rubric}

    def parse_tools(self) -> list[str]:
        tools = self.meta.get("tools", ["stacks", "memory"])
        if not isinstance(tools, list) or any(t not in TOOLS for t in tools):
            self.fail("tools", f"a list drawn from {', '.join(TOOLS)}, got {tools!r}")
        return tools

    def parse_static_flags(self) -> list[dict]:
        raw = self.meta.get("static_flags") or []
        if not isinstance(raw, list):
            self.fail("static_flags", "must be a list")
        flags = []
        for index, item in enumerate(raw):
            where = f"static_flags[{index}]"
            if not isinstance(item, dict):
                self.fail(where, "needs pattern (or absent), en and zh")
            pattern_key = "pattern" if "pattern" in item else "absent"
            pattern = item.get(pattern_key)
            if not isinstance(pattern, str) or not pattern:
                self.fail(where, "needs a pattern (flag when found) or absent (flag when missing)")
            try:
                re.compile(pattern)
            except re.error as exc:
                self.fail(f"{where}.{pattern_key}", f"not a valid regular expression: {exc}")
            flags.append({"mode": pattern_key, "pattern": pattern, **self.bilingual(where, item, where)})
        return flags

    def parse_bad_fix_notes(self) -> dict[str, dict[str, str]]:
        raw = self.meta.get("bad_fixes") or {}
        if not isinstance(raw, dict):
            self.fail("bad_fixes", "must map each folder under bad_fixes/ to {en, zh} describing the cover-up")
        notes = {}
        for name, note in raw.items():
            if not isinstance(name, str) or not KEY_RE.match(name):
                self.fail(f"bad_fixes.{name}", "names are lowercase keys")
            notes[name] = self.bilingual(f"bad_fixes.{name}", note, f"bad_fixes.{name}")
        return notes

    def check_diagnosis_placeholders(self, diagnosis: dict, declared: set[str]) -> None:
        """Rubric synonyms and labels may name the variant's parameters (filled in per attempt when the
        diagnosis is scored); the options are shown before any run, so they stay the same for every seed."""
        for index, option in enumerate(diagnosis["options"]):
            for lang in LANGS:
                if PLACEHOLDER_RE.search(option[lang]):
                    self.fail(f"diagnosis.options[{index}].{lang}", "options are the same for every variant: no {{ }}")
        for index, point in enumerate(diagnosis["rubric"]):
            texts = [("concepts", s) for group in point["concepts"] for s in group]
            texts += [(lang, point[lang]) for lang in LANGS]
            for field_name, text in texts:
                for match in PLACEHOLDER_RE.finditer(text):
                    if match.group(1) not in declared:
                        known = ", ".join(sorted(declared)) or "none"
                        self.fail(
                            f"diagnosis.rubric[{index}].{field_name}",
                            f"{{{{ {match.group(1)} }}}} is not a declared parameter ({known})",
                        )

    def check_placeholders(self, spec: LabSpec) -> None:
        """Every {{ name }} in a template must be a declared parameter."""
        declared = {p.name for p in spec.params}
        trees = [("program", spec.program), ("solution", spec.solution), ("hidden", spec.hidden)]
        trees += [(f"bad_fixes/{name}", files) for name, files in spec.bad_fixes.items()]
        for tree, files in trees:
            allowed = declared | (set(HIDDEN_ONLY_PARAMS) if tree == "hidden" else set())
            for relative, text in files.items():
                for match in PLACEHOLDER_RE.finditer(text):
                    name = match.group(1)
                    if name in allowed:
                        continue
                    line = text.count("\n", 0, match.start()) + 1
                    if name in REMOVED_PARAMS:
                        problem = REMOVED_PARAMS[name]
                    elif name in HIDDEN_ONLY_PARAMS:
                        problem = f"{{{{ {name} }}}} is only available to files under hidden/"
                    else:
                        known = ", ".join(sorted(allowed)) or "none"
                        problem = f"{{{{ {name} }}}} is not a declared parameter ({known})"
                    raise LabSpecError(self.folder / tree / relative, f"line {line}", problem)
        self.check_diagnosis_placeholders(spec.diagnosis, declared)
        for check in spec.checks:
            for key, value in check.options.items():
                if isinstance(value, str):
                    for match in PLACEHOLDER_RE.finditer(value):
                        if match.group(1) not in declared:
                            self.fail(
                                f"checks.{check.name}.{key}", f"{{{{ {match.group(1)} }}}} is not a declared parameter"
                            )

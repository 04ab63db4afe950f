from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.test.utils import override_settings

from labs.loader import latest_version
from labs.models import Lab
from labs.validation import ValidationRow, expected_validation_seconds, validate_version
from labs.validation_report import margin_lines, summary_markdown


class Command(BaseCommand):
    help = (
        "Run every lab variant for N seeds: the faulty program must fail a check, the solution pass all, "
        "each bad fix fail one. Publishes the versions that pass; exits 1 on any violation."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("slugs", nargs="*", help="labs to validate (default with --all: every lab)")
        parser.add_argument("--all", action="store_true", help="every lab that is not retired")
        parser.add_argument("--seeds", type=int, default=3, help="how many seeds (0, 1, …, N-1); default 3")
        parser.add_argument("--backend", choices=("docker", "process"), help="override SANDBOX_BACKEND")
        parser.add_argument(
            "--shard",
            metavar="K/N",
            help="only the K-th of N shards of the catalog, balanced by expected run time, so N processes with "
            "their own databases can validate the catalog side by side",
        )
        parser.add_argument(
            "--claims",
            metavar="DIR",
            help="take labs one at a time, longest first, by claiming each in this folder, which other validatelab "
            "processes share: whichever process is free takes the next lab, so they finish together however far "
            "the time estimates are off",
        )
        parser.add_argument(
            "--unvalidated", action="store_true", help="only labs whose newest version is not validated yet"
        )
        parser.add_argument(
            "--summary", action="store_true", help="end with a Markdown table of every lab's runs and tightest margin"
        )
        parser.add_argument(
            "--rows-out",
            metavar="FILE",
            help="also write every row as JSON (one object a line), for `validationsummary` to merge the tables "
            "of processes that validated the catalog side by side",
        )

    def handle(
        self, *args, slugs, all: bool, seeds: int, backend: str | None, unvalidated: bool, shard, summary: bool,
        claims: str | None = None, rows_out: str | None = None, **options,
    ):  # fmt: skip
        if not slugs and not all:
            raise CommandError("name one or more labs, or pass --all")
        if seeds < 1:
            raise CommandError("--seeds must be at least 1")
        if shard and claims:
            raise CommandError("--shard and --claims split the catalog two different ways: give one")
        index, count = parse_shard(shard) if shard else (0, 1)
        labs = Lab.objects.filter(retired=False)
        if slugs:
            missing = sorted(set(slugs) - set(labs.filter(slug__in=slugs).values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"unknown lab(s): {', '.join(missing)} (run loadlabs first)")
            labs = labs.filter(slug__in=slugs)
        overrides = {"SANDBOX_BACKEND": backend} if backend else {}
        rows: list[ValidationRow] = []
        self.stdout.write(
            f"{'lab':34} {'v':>3} {'seed':>4} {'variant':28} {'expect':6} {'got':6} {'s':>6}  failed checks"
        )
        with override_settings(**overrides):
            ordered = list(labs.order_by("slug"))
            chosen = claimed(ordered, Path(claims)) if claims else shard_of(ordered, index, count)
            for lab in chosen:
                version = latest_version(lab)
                if version is None or (unvalidated and version.validated_at):
                    continue
                mine = validate_version(version, list(range(seeds)), progress=self.print_row)
                if rows_out:  # written lab by lab, so a run cut short still leaves what it measured
                    with open(rows_out, "a", encoding="utf-8") as out:
                        out.writelines(json.dumps({**row.as_dict(), "seeds": seeds}) + "\n" for row in mine)
                self.stdout.write(f"{lab.slug}: margins from the threshold (+ passes, − fails)")
                self.stdout.write("\n".join(margin_lines(mine)))
                rows += mine
        bad = [r for r in rows if not r.ok]
        labs_ok = sorted({r.lab for r in rows} - {r.lab for r in bad})
        self.stdout.write(f"\n{len(rows)} runs, {len(bad)} violation(s); published: {', '.join(labs_ok) or 'none'}")
        if summary:
            self.stdout.write("\n" + summary_markdown(rows, seeds))
        if bad:
            raise CommandError(
                "validation failed:\n  "
                + "\n  ".join(f"{r.lab} seed {r.seed} {r.variant}: expected {r.expected}, got {r.outcome}" for r in bad)
            )

    def print_row(self, row: ValidationRow) -> None:
        mark = "" if row.ok else self.style.ERROR("  ✗")
        if row.revised:  # printed before; scored again over the checks every seed's faulty program failed
            mark += "  (re-scored over all seeds)"
        self.stdout.write(
            f"{row.lab:34} {row.version:>3} {row.seed:>4} {row.variant:28} {row.expected:6} {row.outcome[:6]:6} "
            f"{row.seconds:>6.1f}  {', '.join(row.failed_checks) or '-'}{mark}"
        )


def _cost(lab) -> float:
    version = latest_version(lab)
    return expected_validation_seconds(version.spec if version else {})


def claimed(labs: list, folder: Path) -> Iterator:
    """The labs this process wins, longest expected first: a lab is taken by creating its claim file, which
    exactly one of the processes sharing ``folder`` manages (``O_EXCL``). A claim is made only when the
    process is ready for the lab, so a process that drew quick labs goes on to take more."""
    folder.mkdir(parents=True, exist_ok=True)
    for lab in sorted(labs, key=lambda lab: (-_cost(lab), lab.slug)):
        try:
            os.close(os.open(folder / lab.slug, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            continue
        yield lab


def shard_of(labs: list, index: int, count: int) -> list:
    """The labs of shard ``index``: longest first, each to the shard with the least work so far, so the
    shards finish together. The same catalog always splits the same way."""
    loads = [0.0] * count
    mine = []
    for lab in sorted(labs, key=lambda lab: (-_cost(lab), lab.slug)):
        target = loads.index(min(loads))
        loads[target] += _cost(lab)
        if target == index:
            mine.append(lab)
    return sorted(mine, key=lambda lab: lab.slug)


def parse_shard(text: str) -> tuple[int, int]:
    """ "K/N" (1 ≤ K ≤ N) → (K - 1, N)."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise CommandError(f"--shard must look like 1/2, got {text!r}") from None
    if not 1 <= k <= n:
        raise CommandError(f"--shard {text}: K must be between 1 and N")
    return k - 1, n

"""``manage.py validatelab`` arguments: what a wrong call says, and which labs a shard takes."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from django.core.management import CommandError, call_command

from labs.models import Lab

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "name one or more labs, or pass --all"),
        (("--all", "--seeds", "0"), "--seeds must be at least 1"),
        (("--all", "--shard", "3/2"), "--shard 3/2: K must be between 1 and N"),
        (("--all", "--shard", "half"), "--shard must look like 1/2"),
        (("no-such-lab",), "unknown lab(s): no-such-lab"),
        (("--all", "--shard", "1/2", "--claims", "x"), "--shard and --claims split the catalog two different ways"),
    ],
)
def test_wrong_calls_say_what_is_wrong(args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("validatelab", *args)


def test_shards_split_the_catalog_without_overlap():
    seen = []
    with mock.patch(
        "labs.management.commands.validatelab.validate_version",
        side_effect=lambda version, seeds, progress: seen.append(version.lab.slug) or [],
    ):
        for shard in ("1/2", "2/2"):
            call_command("validatelab", "--all", "--seeds", "1", "--shard", shard)
    every = sorted(Lab.objects.filter(retired=False).values_list("slug", flat=True))
    assert len(every) > 2 and sorted(seen) == every and len(set(seen)) == len(seen)


def test_claiming_processes_take_every_lab_once_longest_first(tmp_path):
    """Two processes sharing a claims folder: the first one to be free takes the next lab. Here the first
    process claims a lab, and while it validates that lab the second process takes everything else."""
    from labs.validation import expected_validation_seconds

    seen: dict[str, list[str]] = {"first": [], "second": []}

    def first(version, seeds, progress):
        if not seen["first"]:
            with mock.patch(
                "labs.management.commands.validatelab.validate_version",
                side_effect=lambda version, seeds, progress: seen["second"].append(version.lab.slug) or [],
            ):
                call_command("validatelab", "--all", "--seeds", "1", "--claims", str(tmp_path))
        seen["first"].append(version.lab.slug)
        return []

    with mock.patch("labs.management.commands.validatelab.validate_version", side_effect=first):
        call_command("validatelab", "--all", "--seeds", "1", "--claims", str(tmp_path))
    every = sorted(Lab.objects.filter(retired=False).values_list("slug", flat=True))
    assert len(seen["first"]) == 1 and sorted(seen["first"] + seen["second"]) == every
    # The lab the first process took is the one expected to take longest.
    costs = {lab.slug: expected_validation_seconds(lab.versions.latest("number").spec) for lab in Lab.objects.all()}
    assert costs[seen["first"][0]] == max(costs.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == every


def test_start_up_validation_opens_the_quickest_labs_first():
    from labs.validation import expected_validation_seconds, pending_versions

    order = pending_versions()
    assert {v.lab.slug for v in order} == set(Lab.objects.filter(retired=False).values_list("slug", flat=True))
    costs = [expected_validation_seconds(v.spec) for v in order]
    assert costs == sorted(costs)
    families = [v.lab.family for v in order]
    assert families.index("correctness") < families.index("nan") < families.index("hang") < families.index("leak")


def test_rows_of_two_processes_merge_into_one_table(tmp_path, capsys):
    """Each process writes its rows (--rows-out); validationsummary prints one table over both, and fails
    when a row is a violation, so the printed table is the one the build stood on."""
    from labs.validation import ValidationRow

    def row(lab: str, variant: str, ok: bool = True) -> ValidationRow:
        expected = "pass" if variant == "solution" else "fail"
        return ValidationRow(lab=lab, version=1, seed=0, variant=variant, expected=expected,
                             outcome=expected if ok else "pass", failed_checks=[] if variant == "solution" else ["x"],
                             seconds=3.0, ok=ok)  # fmt: skip

    files = []
    for name, rows in [("one", [row("b-lab", "baseline"), row("b-lab", "solution")]),
                       ("two", [row("a-lab", "baseline"), row("a-lab", "bad:cheat")])]:  # fmt: skip
        out = tmp_path / f"{name}.jsonl"
        with mock.patch(
            "labs.management.commands.validatelab.validate_version",
            side_effect=lambda version, seeds, progress, rows=rows: rows,
        ):
            call_command("validatelab", Lab.objects.first().slug, "--seeds", "2", "--rows-out", str(out))
        files.append(str(out))
    capsys.readouterr()
    call_command("validationsummary", *files)
    table = capsys.readouterr().out
    assert "seeds 0–1" in table and table.index("`a-lab`") < table.index("`b-lab`")
    assert "`cheat`" in table and "2 labs, 4 runs, 0 violation(s)." in table

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**row("c-lab", "bad:cheat", ok=False).as_dict(), "seeds": 2}) + "\n")
    with pytest.raises(CommandError, match="violations"):
        call_command("validationsummary", *files, str(bad))
    with pytest.raises(CommandError, match="no such file"):
        call_command("validationsummary", str(tmp_path / "missing.jsonl"))

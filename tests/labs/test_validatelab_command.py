"""``manage.py validatelab`` arguments: what a wrong call says, and which labs a shard takes."""

from __future__ import annotations

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


def test_start_up_validation_opens_the_quickest_labs_first():
    from labs.validation import expected_validation_seconds, pending_versions

    order = pending_versions()
    assert {v.lab.slug for v in order} == set(Lab.objects.filter(retired=False).values_list("slug", flat=True))
    costs = [expected_validation_seconds(v.spec) for v in order]
    assert costs == sorted(costs)
    families = [v.lab.family for v in order]
    assert families.index("correctness") < families.index("nan") < families.index("hang") < families.index("leak")

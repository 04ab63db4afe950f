"""Seeded variants: same seed, same bytes; different seeds, different programs; probe seeds from the public seed."""

from __future__ import annotations

import pytest
from django.test import override_settings

from labs.models import Lab
from labs.render import probe_seed
from labs.services import program_for

pytestmark = pytest.mark.django_db


def test_same_seed_gives_identical_files_and_seeds_differ():
    for lab in Lab.objects.all():
        version = lab.versions.order_by("-number").first()
        assert program_for(version, 7) == program_for(version, 7)
        if version.spec["params"]:
            variants = {tuple(sorted(program_for(version, seed).items())) for seed in range(6)}
            assert len(variants) > 1, f"{lab.slug}: six seeds rendered one program"
        for text in program_for(version, 3, "solution").values():
            assert "{{" not in text or "}}" not in text.split("{{", 1)[1].split("\n", 1)[0], lab.slug


def test_probe_seed_is_a_function_of_the_public_seed_only():
    first = probe_seed("lab", 1)
    assert probe_seed("lab", 1) == first and probe_seed("lab", 2) != first and probe_seed("other", 1) != first
    with override_settings(SECRET_KEY="another-secret-key-for-this-test-only-0123456789"):
        assert probe_seed("lab", 1) == first  # nothing of the server's secrets goes into a file a run reads
    assert 0 <= first < 2**31


def test_hidden_files_only_when_graded_and_rendered_from_the_public_seed():
    seen = 0
    for lab in Lab.objects.all():
        version = lab.versions.order_by("-number").first()
        if not version.spec["hidden"]:
            continue
        plain = program_for(version, 1)
        graded = program_for(version, 1, hidden=True)
        assert set(version.spec["hidden"]) <= set(graded)
        assert all(plain.get(name) != graded[name] for name in version.spec["hidden"] if name not in plain)
        assert program_for(version, 1, hidden=True) == graded, lab.slug
        for name in version.spec["hidden"]:
            assert "{{" not in graded[name] and "grader_seed" not in graded[name], (lab.slug, name)
            if "probe_seed" in version.spec["hidden"][name]:
                assert str(probe_seed(lab.slug, 1)) in graded[name], (lab.slug, name)
        seen += 1
    assert seen, "the catalog should hold at least one lab with hidden grading files"

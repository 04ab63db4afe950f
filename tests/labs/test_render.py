"""Seeded variants: same seed, same bytes; different seeds, different programs; hidden seeds unpredictable."""

from __future__ import annotations

import pytest
from django.test import override_settings

from labs.models import Lab
from labs.render import grader_seed
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


def test_grader_seed_depends_on_the_secret_and_the_nonce():
    first = grader_seed("lab", 1, 5)
    assert grader_seed("lab", 1, 5) == first
    assert grader_seed("lab", 1, 6) != first
    with override_settings(SECRET_KEY="another-secret-key-for-this-test-only-0123456789"):
        assert grader_seed("lab", 1, 5) != first


def test_hidden_files_only_with_a_nonce():
    for lab in Lab.objects.all():
        version = lab.versions.order_by("-number").first()
        if version.spec["hidden"]:
            plain = program_for(version, 1)
            graded = program_for(version, 1, nonce=9)
            assert set(version.spec["hidden"]) <= set(graded)
            assert all(plain.get(name) != graded[name] for name in version.spec["hidden"] if name not in plain)
            return
    pytest.fail("the catalog should hold at least one lab with hidden grading files")

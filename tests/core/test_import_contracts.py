"""Every app of the project sits in the import contract that `make test` checks with lint-imports."""

from __future__ import annotations

import tomllib
from pathlib import Path

from django.apps import apps

REPO = Path(__file__).resolve().parents[2]


def contract() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]


def test_every_project_app_is_a_root_package_in_a_layer():
    config = contract()
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    layered = {name.strip("() ") for layer in layers for name in layer.split("|")}
    ours = {app.name for app in apps.get_app_configs() if Path(app.path).resolve().parent == REPO}
    assert ours, "no project apps found"
    missing_root = ours - set(config["root_packages"])
    missing_layer = ours - layered
    assert not missing_root, f"add {sorted(missing_root)} to root_packages in pyproject.toml"
    assert not missing_layer, f"place {sorted(missing_layer)} in a layer of the import contract"

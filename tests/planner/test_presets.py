"""Model presets as data (issue 27): one config.json-style file per preset, read by the reader."""

from __future__ import annotations

import json
import tomllib

from support import REPO

from planner.catalog.models import PRESET_DIR, list_presets


def test_every_preset_is_one_sourced_file_shipped_with_the_package():
    """Each file says where its numbers come from, and the files are package data (a wheel
    carries them)."""
    files = sorted(PRESET_DIR.glob("*.json"), key=lambda path: path.stem)  # name order
    assert [path.stem for path in files] == list_presets()
    for path in files:
        assert json.loads(path.read_text())["_source"].strip(), path.name
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "planner.catalog.presets" in setuptools["packages"]  # a data-only package, as hw_catalog's
    assert "*.json" in setuptools["package-data"]["planner.catalog.presets"]

"""Helpers the tests import (``from support import REPO``; ``from support.jobs import write_job``).

pytest puts tests/ on the import path (``pythonpath`` in pyproject.toml); fixtures live in the
conftest.py files, which no test imports.
"""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
"""The repository root (the checkout the tests run from)."""

DATA = REPO / "tests" / "data"
"""Test inputs shared by every test folder."""

SHARED = REPO.parent / "shared"
"""The shared folder beside the checkout (reference data; read only, may be absent)."""

SOLVERS = ("cbc", "highs") if importlib.util.find_spec("highspy") else ("cbc",)
"""The MILP solvers installed: CBC comes with PuLP; HiGHS needs the [highs] extra (in [test])."""

needs_highs = pytest.mark.skipif("highs" not in SOLVERS, reason="highspy (the [highs] extra) is not installed")

"""Helpers the tests import (``from support import REPO``; ``from support.jobs import write_job``).

pytest puts tests/ on the import path (``pythonpath`` in pyproject.toml); fixtures live in the
conftest.py files, which no test imports.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository root (the checkout the tests run from)."""

DATA = REPO / "tests" / "data"
"""Test inputs shared by every test folder."""

SHARED = REPO.parent / "shared"
"""The shared folder beside the checkout (reference data; read only, may be absent)."""

"""The rooms inside planner/ (CONTRIBUTING.md): ``planner/model`` says what a layout costs and
imports neither the search nor the doors above it; ``planner/search`` says which layout and imports
no door; ``planner/api`` is the one door above both. Read statically, imports inside functions and
under ``TYPE_CHECKING`` included (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import REPO
from support.imports import imported_modules

# room -> the planner modules its files must not import (a module and everything under it)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "planner/model": ("planner.search", "planner.api", "planner.request", "planner.accuracy"),
    "planner/search": ("planner.api", "planner.idle", "planner.count_probe"),
    "planner/catalog": ("planner.search", "planner.api", "planner.request"),
    "planner/accuracy": ("planner.search", "planner.api", "planner.request"),
    # The block-operations table reads the model's fields (shape.py); spec.py counts from the table.
    "planner/model/block.py": ("planner.model.spec",),
    "planner/model/block_rows.py": ("planner.model.spec",),
}


def crossings(room: str, root: Path = REPO) -> list[str]:
    """``file:line: imports module`` for each import from ``room`` (a folder or one file) into a module
    it must not use."""
    found = []
    where = root / room
    for path in sorted(where.rglob("*.py")) if where.is_dir() else [where]:
        for line, module in imported_modules(path):
            if any(module == f or module.startswith(f + ".") for f in FORBIDDEN[room]):
                found.append(f"{path.relative_to(root)}:{line}: imports {module}")
    return found


@pytest.mark.parametrize("room", sorted(FORBIDDEN))
def test_room_imports_nothing_above_it(room):
    assert crossings(room) == []


def test_the_check_sees_a_crossing(tmp_path: Path):
    """The rule means something: a type-only import of the search in a model file is caught."""
    model_file = tmp_path / "planner" / "model" / "probe.py"
    model_file.parent.mkdir(parents=True)
    model_file.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from planner.search import ilp\n")
    assert crossings("planner/model", tmp_path) == ["planner/model/probe.py:3: imports planner.search"]

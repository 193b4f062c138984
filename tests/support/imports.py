"""What a Python file imports, read with ``ast`` (nothing is executed)."""

from __future__ import annotations

import ast
from pathlib import Path

# What the planner (and its tests) must run without: the train and app extras, and the packages built on them.
HEAVY = frozenset({"torch", "streamlit", "plotly", "trainer", "ui"})


def imports(path: Path, *, module_level: bool = False) -> list[tuple[int, str]]:
    """(line, top-level package) of each absolute import in ``path``. ``module_level``: only the
    imports that run when the module is imported (not in a function body or an ``if TYPE_CHECKING:``)."""
    found: list[tuple[int, str]] = []

    def visit(nodes) -> None:
        for node in nodes:
            if module_level and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if module_level and isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((node.lineno, node.module.split(".")[0]))
            visit(ast.iter_child_nodes(node))

    visit(ast.parse(path.read_text(), filename=str(path)).body)
    return found


def heavy_imports(path: Path, *, module_level: bool = False) -> list[str]:
    """``path:line: imports name`` for each import of a HEAVY package."""
    return [
        f"{path}:{line}: imports {name}" for line, name in imports(path, module_level=module_level) if name in HEAVY
    ]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of each absolute import in ``path``, wherever it stands (function
    bodies and ``if TYPE_CHECKING:`` included: a type-only import still ties two rooms)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names] if node.module == "planner" else []
            found.extend((node.lineno, name) for name in names or [node.module])
    return found

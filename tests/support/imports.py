"""What a Python file imports, read with ``ast`` (nothing is executed)."""

from __future__ import annotations

import ast
from pathlib import Path

# What the planner (and its tests) must run without: the train and app extras, and the packages built on them.
HEAVY = frozenset({"torch", "streamlit", "plotly", "trainer", "ui"})


def import_nodes(path: Path, *, module_level: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Each absolute import statement in ``path``. ``module_level``: only the imports that run when
    the module is imported (not in a function body or an ``if TYPE_CHECKING:``)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(nodes) -> None:
        for node in nodes:
            if module_level and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if module_level and isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                found.append(node)
            visit(ast.iter_child_nodes(node))

    visit(ast.parse(path.read_text(), filename=str(path)).body)
    return found


def imports(path: Path, *, module_level: bool = False) -> list[tuple[int, str]]:
    """(line, top-level package) of each absolute import in ``path`` (``module_level``: import_nodes's)."""
    found: list[tuple[int, str]] = []
    for node in import_nodes(path, module_level=module_level):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        else:
            found.append((node.lineno, str(node.module).split(".")[0]))
    return found


def _source(module: str, root: Path) -> Path | None:
    """The file of a module of the repository at ``root`` (None: not one, e.g. a name in a module)."""
    base = root.joinpath(*module.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def loaded_at_import(module: str, root: Path) -> dict[str, str]:
    """The packages from outside the repository at ``root`` that importing ``module`` loads through
    the repository's own module-level imports: {package: the first repository module importing it}.
    Read statically; what those packages import in turn is not followed."""
    found: dict[str, str] = {}
    seen: set[str] = set()
    pending = [module]
    while pending:
        name = pending.pop(0)
        path = _source(name, root)
        if path is None or name in seen:
            continue
        seen.add(name)
        pending.append(name.rpartition(".")[0])  # a package's __init__ runs first
        for node in import_nodes(path, module_level=True):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:  # ``from a.b import c``: a.b, and a.b.c where c is a module
                names = [str(node.module), *(f"{node.module}.{alias.name}" for alias in node.names)]
            for dotted in names:
                top = dotted.partition(".")[0]
                if (root / top / "__init__.py").is_file():
                    pending.append(dotted)
                else:
                    found.setdefault(top, name)
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

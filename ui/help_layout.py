"""``--help`` at 80 columns (buyer trial s50 L1: ``--partition-activati…``, 9 names cut in plan's
help, so they could not be copied). Typer's rich options table takes every column's widest cell
and, where the terminal is narrower, shrinks the widest columns first and then all alike, option
names included. Here the option names keep their width (the help text wraps instead), a flag's
negative form sits in the same cell as the flag ("--expert-tp/--no-expert-tp", as click's plain
help writes it), and a choice list too long for the type column is shown by its option's name;
each such option's help names its choices (tests/ui/test_cli_help.py checks both)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

# The widest type cell kept as typer writes it ('<list[str]>' is 11): a longer choice list
# ('<sdpa-fa2|flash2|...>', 43) took the help column's width at 80 columns.
MAX_METAVAR_CHARS = 12

# typer's options rows: [required,] long names, short names, negative long, negative short, type, help
_OPTION_ROW_CELLS = (6, 7)


def short_metavar(name: str | None, metavar: str | None) -> str | None:
    """``metavar``, or '<name>' ('<list[name]>' for a list) where it is a choice list longer than
    MAX_METAVAR_CHARS (the option's help lists the choices)."""
    if metavar is None or name is None or len(metavar) <= MAX_METAVAR_CHARS or "|" not in metavar:
        return metavar
    return f"<list[{name}]>" if metavar.startswith("<list[") else f"<{name}>"


class WholeNamesTable(Table):
    """typer's options table with its name columns never shrunk nor cut (``_calculate_column_widths``:
    rich shrinks only the columns that may wrap, the type and help columns here)."""

    _names_whole = False  # the columns below were set (the help renders the table more than once)

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        if len(renderables) in _OPTION_ROW_CELLS:
            cells = list(renderables)
            long, negative = len(cells) - 6, len(cells) - 4
            if str(cells[negative]):  # '--expert-tp/--no-expert-tp' in one cell: one column less wide
                merged = Text.assemble(cells[long], "/", cells[negative]) if str(cells[long]) else cells[negative]
                cells[long], cells[negative] = merged, Text("")
            for part in getattr(cells[-1], "renderables", ()):  # typer's help cell: Columns of Texts
                if isinstance(part, Text):  # a word wider than the column (a path, a flag) folds whole
                    part.overflow = "fold"
            renderables = tuple(cells)
        super().add_row(*renderables, **kwargs)

    def _calculate_column_widths(self, console, options):
        if len(self.columns) in _OPTION_ROW_CELLS and not self._names_whole:
            self._names_whole = True
            names, kinds = self.columns[:-2], self.columns[-2:]
            for column in names:
                column.no_wrap = True
            # the type column no wider than its longest word ('<float range> [0.0<=x<=1.0]' wraps):
            # rich shrinks the widest columns first, and a wide type column took the help's width
            kinds[0].max_width = max((len(word) for cell in kinds[0]._cells for word in str(cell).split()), default=1)
            # the columns no row fills go (short names: trainplan has none), 2 blank characters each
            self.columns[:] = [c for c in names if any(str(cell) for cell in c._cells)] + kinds
        return super()._calculate_column_widths(console, options)


def install() -> None:
    """Put ``WholeNamesTable`` in typer's rich help, where this typer has one (``short_metavar`` is
    ui/cli_options.py's, beside its other change to the type column)."""
    try:
        from typer import rich_utils
    except ImportError:  # a typer without rich help: click's plain help cuts nothing
        return
    if hasattr(rich_utils, "Table"):
        rich_utils.Table = WholeNamesTable  # type: ignore[misc]

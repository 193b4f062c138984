"""Trial s51 M6: at 80 columns the portfolio table was 127 wide and its headers broke mid-word
("star / t", "envelop / e"). Where the full table does not fit, the narrow one does: each job's GPUs
under its name, its start and end in one cell, its layout, basis and envelope in a line under it.
Piped output (150 columns) keeps the full table."""

from __future__ import annotations

import pytest
from rich.console import Console
from support import REPO

import ui.render_portfolio as render_portfolio


@pytest.fixture(scope="module")
def solution():
    from planner.api.explore import plan_portfolio
    from ui.portfolio_file import read_jobs_file

    spec = read_jobs_file(REPO / "examples" / "portfolio.toml")
    return plan_portfolio(
        spec.requests(dict(spec.inventory)), spec.inventory, objective=spec.objective, horizon_days=spec.horizon_days
    )


def printed(monkeypatch, solution, width: int) -> list[str]:
    console = Console(width=width, record=True, highlight=False, soft_wrap=True, force_terminal=False)
    monkeypatch.setattr(render_portfolio, "out", console)
    render_portfolio.portfolio(solution, as_json=False)
    return console.export_text().splitlines()


def table_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line[:1] in "┏┃│└┡"]


def test_at_80_columns_the_table_fits_and_breaks_no_word(monkeypatch, solution):
    lines = printed(monkeypatch, solution, 80)
    table = table_lines(lines)
    assert table and max(len(line) for line in table) <= 80
    header = " ".join(cell.strip() for line in table[:6] if line[:1] == "┃" for cell in line.split("┃"))
    for word in ("job", "GPUs", "days", "p80", "cost", "GPU-h"):
        assert word in header.split()
    cells = " ".join(table)
    for a in solution.assignments:
        assert a.job in cells and f"{a.num_gpus} x" in cells and a.gpu_id in cells
        assert f"{a.job}: {a.label}; owned-GPU rate; outside" in lines  # what the narrow table leaves out


def test_piped_output_keeps_the_full_table(monkeypatch, solution):
    lines = printed(monkeypatch, solution, 150)
    header = " ".join(table_lines(lines)[:2])
    for name in ("layout", "start", "end", "basis", "envelope"):
        assert name in header
    assert not any(line.startswith("each job's layout") for line in lines)

"""``trainplan`` listing commands: catalog (the GPUs) and models (the presets, or config.json files).

Registered on the shared Typer app by ui/cli.py (which keeps the planning commands and the error
mapping of ``main``); thin like them: parse, call, render (ui/render_listings.py).
"""

from __future__ import annotations

import typer

from ui import render_listings
from ui.cli_options import JSON


def catalog(as_json: bool = JSON) -> None:
    """List the GPUs in the hardware catalog with their key numbers and sources."""
    from planner.catalog.hardware import load_catalog

    render_listings.catalog(load_catalog(), as_json=as_json)


def models(
    names: list[str] | None = typer.Argument(
        None,
        metavar="PRESET|CONFIG.JSON",
        help="show only these presets or config.json files, as --model reads them",
    ),
    as_json: bool = JSON,
) -> None:
    """List the model presets (--model NAME) with their sizes, or the presets and config.json files named."""
    from planner.catalog.models import get_preset, list_presets, load_model

    # trial s35: the help said a config.json path works, and `models PATH` was refused
    render_listings.models(
        [load_model(n) for n in names] if names else [get_preset(n) for n in list_presets()],
        as_json=as_json,
        named=bool(names),
    )

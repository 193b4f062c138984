"""Every command's --help: complete (each option says what it does) and rendered right."""

import os
import subprocess
import sys

import pytest
import typer

from ui.cli import app

COMMAND = typer.main.get_command(app)
NAMES = sorted(COMMAND.commands)


def help_text(*args: str) -> str:
    """The help as a user sees it: the CLI in a subprocess, rich rendering at 120 columns."""
    proc = subprocess.run(
        [sys.executable, "-m", "ui.cli", *args, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "120", "TERM": "dumb", "NO_COLOR": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_every_command_is_checked():
    assert {"estimate", "plan", "explain", "catalog", "detect", "emit", "run", "portfolio", "fleet", "app"} <= set(
        NAMES
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_option_has_help(name):
    command = COMMAND.commands[name]
    assert command.help, f"{name}: no command help"
    missing = [p.opts[0] for p in command.params if not (getattr(p, "help", None) or "").strip()]
    assert not missing, f"trainplan {name}: options without help text: {missing}"


@pytest.mark.parametrize("name", ["", *NAMES])
def test_help_renders_without_bool_metavar(name):
    text = help_text(*filter(None, [name]))
    assert "Usage:" in text
    assert "<bool>" not in text, text
    assert "--help" in text


def test_flags_take_no_value():
    for name in NAMES:
        for param in COMMAND.commands[name].params:
            if isinstance(param, typer.core.TyperOption) and param.type_descriptor.annotation is bool:
                assert param.is_flag, f"trainplan {name} {param.opts[0]} is not a flag"


@pytest.mark.parametrize(
    ("name", "literals"),
    [
        ("portfolio", ["[inventory]", "[[jobs]]"]),
        ("fleet", ["buy = [...]", "[purchase_usd]", "[[jobs]]", "horizon_days"]),
    ],
)
def test_jobs_file_tables_survive_rich_markup(name, literals):
    text = " ".join(help_text(name).replace("│", " ").split())
    for literal in literals:
        assert literal in text, f"trainplan {name} --help lost {literal!r}:\n{text}"

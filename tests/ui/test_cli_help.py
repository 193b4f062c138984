"""Every command's --help: complete (each option says what it does) and rendered right."""

import io
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest
import typer

from ui.cli import app, main

COMMAND = typer.main.get_command(app)
NAMES = sorted(COMMAND.commands)


TERMINAL = {"COLUMNS": "120", "TERM": "dumb", "NO_COLOR": "1"}


def help_text(*args: str) -> str:
    """The help as a user sees it, rich rendering at 120 columns: ``ui.cli.main`` (what the installed
    command calls) in this process, which a start of its own would spend ~2 s of imports on (that the
    process prints the same: test_the_command_prints_the_same_help)."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(out), redirect_stderr(io.StringIO()) as err:
        for key, value in TERMINAL.items():  # rich reads them when the help's console is made
            patch.setenv(key, value)
        code = main([*args, "--help"])
    assert code == 0, err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize("name", ["", "plan"])
def test_the_command_prints_the_same_help(name):
    args = [*filter(None, [name]), "--help"]
    proc = subprocess.run(
        [sys.executable, "-m", "ui.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **TERMINAL},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == help_text(*args[:-1])


def test_every_command_is_checked():
    names = {"estimate", "plan", "explain", "catalog", "models", "detect", "emit", "run", "portfolio", "fleet", "app"}
    assert names <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_option_has_help(name):
    command = COMMAND.commands[name]
    assert command.help, f"{name}: no command help"
    missing = [p.opts[0] for p in command.params if not (getattr(p, "help", None) or "").strip()]
    assert not missing, f"trainplan {name}: options without help text: {missing}"


def test_calibrate_names_every_command_that_applies_a_calibration():
    """Its summary said "plan, estimate and explain" while emit, portfolio and fleet took
    --calibration too (s47); the summary is the command list's one line, so one line it stays."""
    takes = {name for name in NAMES if any("--calibration" in p.opts for p in COMMAND.commands[name].params)}
    summary = (COMMAND.commands["calibrate"].help or "").split("\n\n")[0]
    assert "\n" not in summary.strip(), summary
    missing = sorted(name for name in takes if name not in summary.replace(",", " ").split())
    assert len(takes) >= 6 and not missing, f"calibrate's summary leaves out {missing}: {summary!r}"


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


@pytest.mark.parametrize("name", NAMES)
def test_every_command_shows_examples_that_parse_as_it_reads_them(name):
    """Trial s35: no command's --help had an example. Each is shown, and its words parse with the
    command's own options and arguments (an unknown flag or a bad value fails here)."""
    import shlex

    from ui.cli_examples import EXAMPLES

    shown = " ".join(help_text(name).split())
    assert "Examples:" in shown and EXAMPLES[name]
    command = COMMAND.commands[name]
    for example in EXAMPLES[name]:
        words = shlex.split(example)
        assert words[:2] == ["trainplan", name] and " ".join(words) in shown, example
        command.make_context(name, words[2:])  # raises click's UsageError / BadParameter


def test_the_planning_examples_run(tmp_path, monkeypatch):
    """Review s35: an estimate example parsed and then failed ("the 1f1b schedule needs grad_accum >=
    pp"). The examples that read no file of the user's run, exit 0, from a scratch directory."""
    import shlex

    from ui.cli_examples import EXAMPLES

    monkeypatch.chdir(tmp_path)
    for name in ("estimate", "plan", "catalog", "models"):
        for example in EXAMPLES[name]:
            words = shlex.split(example)[1:]
            if any("/" in w for w in words):
                continue  # a config.json of the user's
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
                code = main(words)
            assert code == 0, (example, err.getvalue())


def test_the_jobs_file_commands_name_the_keys_a_job_takes():
    """Trial s35: a [[jobs]] entry's keys were listed only in the error an unknown key gets."""
    from ui.portfolio_file import JobEntry

    for name in ("portfolio", "fleet"):
        shown = " ".join(help_text(name).split())
        assert all(key in shown for key in JobEntry.model_fields) and f"examples/{name}.toml" in shown


def test_fleet_help_says_it_ignores_a_jobs_budget():
    """Practitioner s47: fleet's help listed budget_usd among a job's keys, and only a warning
    after the solve said fleet ignores it; portfolio, which honours it, says no such thing."""

    def words(name: str) -> str:  # the help's text, its box borders and line breaks dropped
        return " ".join(help_text(name).replace("│", " ").split())

    assert "budget_usd: portfolio's; fleet ignores it" in words("fleet")
    assert "fleet ignores" not in words("portfolio")


@pytest.mark.parametrize("command", ["emit", "portfolio"])
def test_the_job_script_flags_stand_apart(command: str) -> None:
    """Review s50: portfolio's --slurm-*/--k8s-* read as if they shaped the plan, among its options;
    they set the emitted jobs' scripts only, in a panel of their own in both commands."""
    from ui.cli_options import SCRIPTS_PANEL
    from ui.cluster_flags import CLUSTER_FLAGS

    text = help_text(command)
    panel = text.index(SCRIPTS_PANEL)
    assert all(text.index(flag.flag) > panel for flag in CLUSTER_FLAGS.values())
    assert text.index("--k8s-image") > panel and text.index("--json" if command == "portfolio" else "--out") < panel


def help_at(columns: int, *args: str) -> str:
    """``help_text`` at another terminal width."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(TERMINAL, "COLUMNS", str(columns))
        return help_text(*args)


@pytest.mark.parametrize("name", ["plan", "estimate", "portfolio", "fleet"])
def test_option_names_are_whole_at_80_columns(name):
    """Buyer trial s50 L1: at 80 columns rich cut plan's names ('--partition-activati…', 9 of them),
    so they could not be copied; every name, a flag's negative form too, is whole now, and no word
    of the help ends in '…' (a path wider than the column folds onto the next line)."""
    text = help_at(80, name)
    shown = {word.strip("│,/") for line in text.splitlines() for word in line.replace("/", " ").split()}
    command = COMMAND.commands[name]
    names = [opt for p in command.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")]
    assert len(names) > 5 and not [n for n in names if n not in shown], [n for n in names if n not in shown]
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80


def test_a_long_choice_list_is_named_and_its_help_lists_the_choices():
    """The type column keeps typer's choice list up to MAX_METAVAR_CHARS; a longer one ('<trainplan|
    torchtitan|...>', 112 characters, took the help's width at 80 columns) shows the option's name,
    so its help must name every choice."""
    import click

    from ui.help_layout import MAX_METAVAR_CHARS

    shortened = 0
    for name in NAMES:
        command = COMMAND.commands[name]
        ctx = click.Context(command, info_name=name)
        for param in command.params:
            if not isinstance(param, typer.core.TyperOption) or param.is_flag:
                continue
            full = param.metavar or param.display_type(ctx) or ""  # typer's own, before ours
            if param.display_type_rich(ctx=ctx) == full:
                continue
            assert len(full) > MAX_METAVAR_CHARS and "|" in full, (name, param.name, full)
            choices = full.removeprefix("<list[").strip("<>[]").split("|")
            words = re.findall(r"[\w.-]+", param.help)
            assert not [c for c in choices if c not in words], (name, param.name, choices, param.help)
            shortened += 1
    assert shortened >= 5  # --stack, --attention, --ac, --precision (plan, estimate), --objective, --device

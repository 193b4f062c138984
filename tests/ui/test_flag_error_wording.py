"""How a refused flag reads. A mistyped long option names the options it most likely meant (click's
own list compared the names with their dashes: ``plan --days 30`` suggested ``--ac``, ``--budget``
``--out``). A value out of range reads one way whoever checks it (review s49: ``>= 1, got 0``,
``>= 1 (got 0)`` and typer's "Invalid value for '--keep-checkpoints': Input should be greater than
or equal to 1", without the value)."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from planner.errors import ExitCode
from ui.cli import main
from ui.cli_errors import MAX_OPTION_SUGGESTIONS, option_suggestions
from ui.inputs import sized_number

PLAN = ("plan", "--model", "gpt3-125m", "--tokens", "1e9")


def refused_line(*args: str) -> str:
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(list(args))
    lines = stderr.getvalue().splitlines()
    assert code == ExitCode.INVALID and len(lines) == 1, stderr.getvalue()
    return lines[0]


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("--days", "(did you mean --deadline-days?)"),
        ("--deadline", "(did you mean --deadline-days?)"),
        ("--budget", "(did you mean --budget-usd?)"),
        ("--gpu", "(did you mean --gpus, --max-gpus or --per-gpu?)"),
        ("--objectiv", "(did you mean --objective?)"),
        ("--xyzzy", "(see --help)"),
    ],
)
def test_plan_names_the_option_meant(typed: str, meant: str) -> None:
    assert refused_line(*PLAN, typed, "3") == f"trainplan: error: No such option: {typed} {meant}"


def test_each_command_suggests_from_its_own_options() -> None:
    line = refused_line("estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpu", "8")
    assert line.endswith("(did you mean --num-gpus?)"), line


def test_suggestions_rank_words_before_spellings_and_stay_short() -> None:
    names = ["--seq-len", "--seed", "-s", "--sequence-parallel", "--set", "--sep", "--serve"]
    assert option_suggestions("--se", names) == ["--seed", "--sep", "--seq-len"]
    assert len(option_suggestions("--se", names)) == MAX_OPTION_SUGGESTIONS
    assert option_suggestions("--sed", names)[0] == "--seed"  # no word starts so: the closest spellings
    assert option_suggestions("--", names) == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        ((*PLAN, "--term-filled", "2"), "--term-filled must be <= 1 (got 2)"),  # typer's own range
        ((*PLAN, "--term-filled", "x"), "--term-filled must be a number (got x)"),
        ((*PLAN, "--max-gpus", "0"), "--max-gpus must be a finite number >= 1 and <= 1,048,576 (got 0)"),  # ours
        ((*PLAN, "--top", "x"), "--top must be a whole number (got x)"),
        (
            ("estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8", "--micro-batch", "0"),
            "--micro-batch must be >= 1 (got 0)",
        ),
    ],
)
def test_range_errors_read_one_way(args: tuple[str, ...], line: str) -> None:
    assert refused_line(*args) == f"trainplan: error: {line}"


def test_a_choice_flag_keeps_its_choices() -> None:
    line = refused_line(*PLAN, "--risk", "p70")
    assert line == "trainplan: error: --risk: 'p70' is not one of 'p50', 'p80', 'p90'.", line


@pytest.mark.parametrize(
    ("text", "value"), [("15T", 15e12), ("2.5M", 2.5e6), ("200b", 2e11), ("4,194,304", 4194304), ("2e11", 2e11)]
)
def test_counts_and_amounts_take_the_suffixes_buyers_write(text: str, value: float) -> None:
    """Buyer trial s50 L2: ``--tokens 15T`` and ``--budget-usd 5M`` were refused as not numbers."""
    assert sized_number(text) == value


def test_a_suffixed_flag_reads_in_the_plan_and_refuses_in_one_line() -> None:
    def plan_json(*args: str) -> dict:
        stdout, stderr = io.StringIO(), io.StringIO()
        with redirect_stdout(stdout), redirect_stderr(stderr):
            assert main(["plan", "--model", "gpt3-125m", *args, "--top", "0", "--json"]) == 0, stderr.getvalue()
        return json.loads(stdout.getvalue())["plan"]

    suffixed, written = (
        plan_json("--tokens", "1B", "--budget-usd", "5k"),
        plan_json("--tokens", "1e9", "--budget-usd", "5000"),
    )
    assert suffixed["time_to_train_h"] == written["time_to_train_h"] and suffixed["num_gpus"] == written["num_gpus"]
    line = refused_line(*PLAN[:3], "--tokens", "15X")
    assert line.startswith("trainplan: error: --tokens must be a number such as 2e11") and line.endswith("(got 15X)")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("plan", "--model", "gpt3-125m"),
            "--tokens is required (e.g. --tokens 160e9 for an 8B model, 20 × its parameters)",
        ),
        (("plan", "--tokens", "1e9"), "--model is required"),
        (("emit",), "PLAN_FILE is required"),
    ],
)
def test_a_missing_required_option_says_it_is_required(args: tuple[str, ...], line: str) -> None:
    """app53 L12: click's MissingParameter has an empty message, so the line ended ``--tokens: ``."""
    assert refused_line(*args) == f"trainplan: error: {line}"

"""Fleet51 M7: risk, horizon, slots, price kind and the [ownership] keys were file keys only, so every
sensitivity run needed its own copy of the file (20 of them). portfolio and fleet take them as flags
for one run (ui/jobs_overrides.py): the answer is the edited file's, and says what the command line set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import assert_one_line, call

# Every key a flag replaces is set in the file, so each override says the file's value too.
FLEET = """
horizon_days = 60.0
num_slots = 4
risk = "p80"
price_kind = "on-demand"
buy = ["h100-sxm"]
[ownership]
cost_of_capital_rate = 0.05
hosting_usd_per_gpu_month = 100.0
utilisation = 0.7
[[jobs]]
name = "small"
model = "gpt3-125m"
tokens = 2e10
deadline_days = 30.0
"""
PORTFOLIO = """
horizon_days = 60.0
num_slots = 2
risk = "p80"
price_kind = "on-demand"
rented = ["a100-80gb-sxm"]
[inventory]
h100-sxm = 8
a100-80gb-sxm = 8
[ownership]
cost_of_capital_rate = 0.05
hosting_usd_per_gpu_month = 100.0
[[jobs]]
name = "small"
model = "gpt3-125m"
tokens = 2e10
deadline_days = 30.0
[[jobs]]
name = "tiny"
model = "gpt3-125m"
tokens = 1e10
deadline_days = 30.0
"""
# flag, value, the file's line for it, the same line edited, the key --json's overrides names
CASES = {
    "risk": ("--risk", "p90", 'risk = "p80"', 'risk = "p90"', "risk"),
    "horizon": ("--horizon-days", "45", "horizon_days = 60.0", "horizon_days = 45.0", "horizon_days"),
    "slots": ("--num-slots", "3", "num_slots = {slots}", "num_slots = 3", "num_slots"),
    "price_kind": ("--price-kind", "spot", 'price_kind = "on-demand"', 'price_kind = "spot"', "price_kind"),
    "capital": (
        "--cost-of-capital-rate",
        "0.2",
        "cost_of_capital_rate = 0.05",
        "cost_of_capital_rate = 0.2",
        "ownership.cost_of_capital_rate",
    ),
    "hosting": (
        "--hosting-usd-per-gpu-month",
        "400",
        "hosting_usd_per_gpu_month = 100.0",
        "hosting_usd_per_gpu_month = 400.0",
        "ownership.hosting_usd_per_gpu_month",
    ),
    "utilisation": ("--utilisation", "0.4", "utilisation = 0.7", "utilisation = 0.4", "ownership.utilisation"),
}
FILE_VALUES = {
    "risk": "p80",
    "horizon_days": 60.0,
    "price_kind": "on-demand",
    "ownership.cost_of_capital_rate": 0.05,
    "ownership.hosting_usd_per_gpu_month": 100.0,
    "ownership.utilisation": 0.7,
}
COMMANDS = {"fleet": (FLEET, 4), "portfolio": (PORTFOLIO, 2)}
RUNS = [(command, case) for command in COMMANDS for case in CASES if (command, case) != ("portfolio", "utilisation")]


def answer(command: str, path: Path, *flags: str) -> dict:
    code, out, err = call(command, str(path), "--json", *flags)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """Each command's file, and its answer without a flag."""
    found = {}
    for command, (text, _) in COMMANDS.items():
        path = tmp_path_factory.mktemp(command) / "jobs.toml"
        path.write_text(text)
        found[command] = (path, answer(command, path))
    return found


@pytest.mark.parametrize(("command", "case"), RUNS)
def test_a_flag_answers_as_the_edited_file_does(command, case, plain, tmp_path):
    flag, value, line, edited, key = CASES[case]
    text, slots = COMMANDS[command]
    line = line.format(slots=slots)
    assert line in text
    path, before = plain[command]
    edited_file = tmp_path / "edited.toml"
    edited_file.write_text(text.replace(line, edited))
    overridden = answer(command, path, flag, value)
    from_file = answer(command, edited_file)
    said = overridden.pop("overrides")
    file_value = FILE_VALUES.get(key, slots)
    assert said == {key: {"value": type(file_value)(value), "file": file_value}}
    assert from_file.pop("overrides") == {} and before["overrides"] == {}
    assert overridden == from_file
    if (command, case) != ("portfolio", "slots"):  # the slots refine a model whose answer here is the same
        assert overridden != {k: v for k, v in before.items() if k != "overrides"}, f"{flag} {value} changed nothing"


def test_portfolio_solves_with_the_flags_slots(plain, monkeypatch):
    """The slots leave this portfolio's answer as it is (test above), so the solve says what it got."""
    import planner.api.explore as explore

    solve, got = explore.plan_portfolio, []

    def spy(*args, **options):
        got.append(options.get("num_slots"))
        return solve(*args, **options)

    monkeypatch.setattr(explore, "plan_portfolio", spy)
    path, _ = plain["portfolio"]
    answer("portfolio", path, "--num-slots", "3")
    answer("portfolio", path)
    assert got == [3, 2]


def test_the_text_says_each_override_and_the_files_value(plain):
    path, _ = plain["fleet"]
    code, out, err = call("fleet", str(path), "--risk", "p90", "--horizon-days", "45", "--utilisation", "0.4")
    assert code == 0, err
    lines = out.splitlines()
    said = "overrides: risk p90 (file: p80), horizon_days 45 (file: 60), ownership.utilisation 0.4 (file: 0.7)"
    assert said in lines, out[:2000]
    assert not any(line.startswith("overrides:") for line in call("fleet", str(path))[1].splitlines())


def test_an_unset_key_is_said_as_not_set(tmp_path):
    path = tmp_path / "jobs.toml"
    path.write_text(FLEET.replace("cost_of_capital_rate = 0.05\n", ""))
    said = answer("fleet", path, "--cost-of-capital-rate", "0.1")["overrides"]
    assert said == {"ownership.cost_of_capital_rate": {"value": 0.1, "file": None}}
    code, out, err = call("fleet", str(path), "--cost-of-capital-rate", "0.1")
    assert code == 0 and "ownership.cost_of_capital_rate 0.1 (file: not set)" in out, err


def test_an_infeasible_answer_says_its_overrides(plain):
    path, _ = plain["portfolio"]
    code, out, err = call("portfolio", str(path), "--json", "--horizon-days", "0.01", "--risk", "p50")
    assert code == 0, err
    data = json.loads(out)
    assert data["feasible"] is False
    assert data["overrides"] == {
        "risk": {"value": "p50", "file": "p80"},
        "horizon_days": {"value": 0.01, "file": 60.0},
    }
    code, out, err = call("portfolio", str(path), "--horizon-days", "0.01")
    assert out.splitlines()[0] == "overrides: horizon_days 0.01 (file: 60)", out


@pytest.mark.parametrize(
    ("command", "flag", "value", "file_line", "bad_line"),
    [
        ("fleet", "--horizon-days", "0", "horizon_days = 60.0", "horizon_days = 0.0"),
        ("fleet", "--num-slots", "0", "num_slots = 4", "num_slots = 0"),
        ("portfolio", "--risk", "p99", 'risk = "p80"', 'risk = "p99"'),
        ("portfolio", "--price-kind", "cheap", 'price_kind = "on-demand"', 'price_kind = "cheap"'),
        ("fleet", "--utilisation", "1.5", "utilisation = 0.7", "utilisation = 1.5"),
        ("portfolio", "--cost-of-capital-rate", "2", "cost_of_capital_rate = 0.05", "cost_of_capital_rate = 2.0"),
        ("fleet", "--hosting-usd-per-gpu-month", "-1", "hosting_usd_per_gpu_month = 100.0", "hosting_usd_per_gpu_month = -1.0"),
        ("fleet", "--horizon-days", "inf", "horizon_days = 60.0", "horizon_days = inf"),
    ],
)  # fmt: skip
def test_a_bad_value_gets_the_files_refusal_naming_the_flag(command, flag, value, file_line, bad_line, plain, tmp_path):
    path, _ = plain[command]
    bad_file = tmp_path / "bad.toml"
    bad_file.write_text(COMMANDS[command][0].replace(file_line, bad_line))
    code, _, file_err = call(command, str(bad_file))
    assert code == 2, file_err
    file_reason = file_err.strip().split(": ", 4)[-1]  # "trainplan: error: PATH: KEY: reason"
    code, out, err = call(command, str(path), flag, value)
    assert_one_line(code, err, f"{flag} {value}: {file_reason}")
    assert out == ""


def test_a_horizon_before_a_release_is_refused_as_the_file_is(plain, tmp_path):
    path = tmp_path / "late.toml"
    path.write_text(FLEET.replace("deadline_days = 30.0", "deadline_days = 30.0\nstart_after_days = 20.0"))
    code, _, err = call("fleet", str(path), "--horizon-days", "10")
    assert_one_line(code, err, "--horizon-days 10: job 'small': start_after_days 20 is not before horizon_days 10")


def test_portfolio_takes_no_utilisation(plain):
    """Portfolio costs owned GPUs per busy and idle hour: a busy share would be read and dropped."""
    path, _ = plain["portfolio"]
    code, _, err = call("portfolio", str(path), "--utilisation", "0.5")
    assert_one_line(code, err, "--utilisation")


@pytest.mark.parametrize("command", ["portfolio", "fleet"])
def test_the_help_lists_the_flags(command):
    import typer

    from ui.cli import app
    from ui.jobs_overrides import FLEET_OVERRIDES, OVERRIDE_FLAGS, PORTFOLIO_OVERRIDES

    names = FLEET_OVERRIDES if command == "fleet" else PORTFOLIO_OVERRIDES
    params = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    options = {opt for p in params for opt in p.opts}
    assert {OVERRIDE_FLAGS[name].flag for name in names} <= options

"""A jobs file's after = [...] (docs/ilp.md "Precedence"): refused in one line naming the job and
the key, exit 2; shown in the text and --json of portfolio and fleet where set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ui.cli import main


def _jobs(after: dict[str, str]) -> str:
    """Three small jobs a, b, c on 8 owned H100, each with its ``after`` line where given."""
    text = "horizon_days = 120\n[inventory]\nh100-sxm = 8\n"
    for name in "abc":
        text += f'[[jobs]]\nname = "{name}"\nmodel = "llama3.2-1b"\ntokens = 1e10\n'
        text += f"after = {after[name]}\n" if name in after else ""
    return text


@pytest.mark.parametrize(
    ("after", "words"),
    [
        ({"a": '"b"'}, "job 'a' (the 1st [[jobs]]): after: Input should be a valid list"),
        ({"a": "[1]"}, "job 'a' (the 1st [[jobs]]): after.0: Input should be a valid string"),
        ({"a": '["a"]'}, "job 'a': after names the job itself"),
        ({"b": '["pretrain"]'}, "job 'b': after names 'pretrain', which is no job of the file (its jobs: a, b, c)"),
        (
            {"a": '["c"]', "b": '["a"]', "c": '["b"]'},
            "after: the jobs wait on each other in a cycle, a -> b -> c -> a (each starts after the one before it ends)",
        ),
    ],
)
def test_a_bad_after_is_one_line(tmp_path: Path, capsys, after, words) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text(_jobs(after))
    assert main(["portfolio", str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("command", ["portfolio", "fleet"])
def test_a_job_after_another_starts_when_it_ends_and_says_so(tmp_path: Path, capsys, command) -> None:
    text = _jobs({"c": '["a", "b"]'})
    path = tmp_path / "jobs.toml"
    path.write_text(('buy = ["h100-sxm"]\n' if command == "fleet" else "") + text)
    assert main([command, str(path), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    rows = {j["job"]: j for j in (answer["assignments"] if command == "portfolio" else answer["mixed"]["assignments"])}
    assert rows["c"]["after"] == ["a", "b"] and rows["a"]["after"] is None
    assert rows["c"]["start_days"] >= max(rows["a"]["end_days"], rows["b"]["end_days"]) - 1e-9
    assert main([command, str(path)]) == 0
    assert "after: c after a, b (none starts before those end; deadlines count from day 0)" in capsys.readouterr().out


def test_a_chain_past_a_deadline_is_named_without_a_gpu_count(tmp_path: Path, capsys) -> None:
    """The chain's answer names it and the two ways out; no count of GPUs past the inventory, which
    plan's probe would size for the last job alone (its chain is what ends late)."""
    path = tmp_path / "jobs.toml"
    path.write_text(_jobs({"c": '["a"]'}).replace('name = "c"\n', 'name = "c"\ndeadline_days = 0.5\n'))
    assert main(["portfolio", str(path)]) == 0  # an answer, as every infeasible portfolio's
    out = capsys.readouterr().out
    assert "job 'c': after 'a', which ends on day" in out and "must end by day 0.5 (deadline_days" in out
    assert "or drop 'a' from after" in out and "more than the inventory" not in out


def test_fleet_says_why_rent_only_is_none_in_text_and_json(tmp_path: Path, capsys, monkeypatch) -> None:
    """Review after52 M3: where a chain of rent rows ends a job late, rent only is none, and the table
    left its row out without a word. The planner's case is in tests/planner/test_after.py; here its
    answer (``_rent_only``'s) is forced on a small file to check the words."""
    import planner.search.fleet as fleet_module
    from planner.search.late_band import LateOnRentRows

    late = (LateOnRentRows("c", ("a", "b"), 13.04, 12.0, "deadline_days"),)
    monkeypatch.setattr(fleet_module, "_rent_only", lambda model: (None, late))
    path = tmp_path / "jobs.toml"
    owned = "[inventory]\nh100-sxm = 8\n"  # none owned: rent only is every job's rent row
    path.write_text('buy = ["h100-sxm"]\n' + _jobs({"c": '["a", "b"]'}).replace(owned, ""))
    assert main(["fleet", str(path), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["rent_only"] is None and answer["rent_only_late"] == [
        {"job": "c", "after": ["a", "b"], "end_days": 13.04, "limit_days": 12.0, "limit_key": "deadline_days"}
    ]
    assert main(["fleet", str(path)]) == 0
    assert (
        "rent only: none: with every job on its rent row, c (after a, b) ends on day 13.0, past its deadline_days"
        " of day 12 (" in capsys.readouterr().out
    )


def test_several_late_chains_are_headed_as_chains_in_the_cli(tmp_path: Path, capsys) -> None:
    """Review after52 M2: "2 jobs cannot run on their own" headed two late chains, though each job
    runs alone (the answer judged at the jobs' risk is rebuilt from each job's own)."""
    text = _jobs({"b": '["a"]', "c": '["a"]'})
    for name in "bc":
        text = text.replace(f'name = "{name}"\n', f'name = "{name}"\ndeadline_days = 0.5\n')
    path = tmp_path / "jobs.toml"
    path.write_text(text)
    assert main(["portfolio", str(path)]) == 0  # an answer, as every infeasible portfolio's
    out = capsys.readouterr().out
    assert "deadline: 2 jobs cannot end in time after the jobs they start after (after): job 'b': after 'a'" in out
    assert "on their own" not in out

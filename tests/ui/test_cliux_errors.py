"""Trial s19, findings 13 and 14: errors name the flags a user typed, not the planner's fields; the
alternatives table, DDP replicas, learned positions and the ``--gpus`` help say what they do."""

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest

from planner.errors import ExitCode
from planner.search.space import DEFAULT_MAX_GPUS
from ui.cli import main

ESTIMATE = ("estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8")
PLAN = ("plan", "--model", "gpt3-125m", "--tokens", "1e9")


def run(*args: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(list(args))
    return code, stdout.getvalue(), stderr.getvalue()


def refused(*args: str) -> str:
    """The one error line of a refused command (exit code 2)."""
    code, _, stderr = run(*args)
    lines = stderr.splitlines()
    assert code == ExitCode.INVALID and len(lines) == 1, stderr
    return lines[0].removeprefix("trainplan: error: ")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((*ESTIMATE, "--micro-batch", "0"), "--micro-batch must be >= 1 (got 0)"),
        ((*ESTIMATE, "--dp-replicate", "0"), "--dp-replicate must be >= 1 (got 0)"),
        ((*ESTIMATE, "--vpp", "0"), "--vpp must be >= 1 (got 0)"),
        ((*ESTIMATE, "--tp", "0"), "--tp must be >= 1 (got 0)"),
        ((*PLAN, "--top", "-1"), "--top must be >= 0 (got -1)"),
        ((*PLAN, "--top", "101"), "--top must be <= 100 (got 101)"),
    ],
)
def test_a_bound_names_the_flag(args, expected):
    assert refused(*args) == expected


@pytest.mark.parametrize("command", [ESTIMATE, PLAN])
def test_a_bad_price_kind_names_the_flag_and_the_kinds(command):
    message = refused(*command, "--price-kind", "bogus")
    assert message.startswith("--price-kind: 'bogus' is not one of 'on-demand'")
    assert "price_kind" not in message


def test_an_enum_flag_keeps_no_pydantic_prefix():
    assert "Value error" not in refused(*ESTIMATE, "--sharding", "bogus")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--sharding", "none", "--dp-shard", "8"), "give --dp-replicate, not --dp-shard (got --dp-shard 8)"),
        (("--dp-shard", "0"), "--dp-shard must be >= 1, or -1 for the rest of the GPUs (got 0)"),
        (("--vpp", "2"), "--vpp 2 (interleaved stages) needs --pp > 1"),
        (("--tp", "3"), "--num-gpus 8 is not divisible by --dp-replicate x --tp x --pp x --cp = 3"),
    ],
)
def test_a_layout_rule_names_the_flags(flags, expected):
    message = refused(*ESTIMATE, *flags)
    assert expected in message
    assert not re.search(r"(?<!-)\b(dp_shard|dp_replicate)\b", message), message


def test_a_price_of_zero_or_below_reads_the_same():
    zero, negative = refused(*ESTIMATE, "--price", "0"), refused(*ESTIMATE, "--price", "-3")
    assert zero.replace("got 0", "got X") == negative.replace("got -3", "got X")
    assert "--price must be a finite number > 0" in zero
    pair_zero, pair_negative = refused(*PLAN, "--price", "h100-sxm=0"), refused(*PLAN, "--price", "h100-sxm=-3")
    assert "> 0" in pair_zero and pair_zero.replace("got 0", "got X") == pair_negative.replace("got -3", "got X")


def test_a_refused_number_reads_as_it_was_typed():
    """Trial s47 L5: a count read "got 0.0" and a token budget "got -5.0"."""
    assert refused(*PLAN, "--gpus", "a100-80gb-sxm=0").endswith("<= 1,048,576 (got 0)")
    assert refused(*ESTIMATE, "--nodes", "0").endswith(" (got 0)")
    assert refused("plan", "--model", "llama3-8b", "--tokens", "-5").endswith(" (got -5)")
    # past int64 the layout's arrays held Python ints and the step model divided by zero (fuzz s47)
    assert refused(*ESTIMATE, "--micro-batch", "99999999999999999999").startswith("--micro-batch must be a finite")


def test_zero_nodes_is_a_bound_not_a_divisor():
    message = refused(*ESTIMATE, "--nodes", "0")
    assert message.startswith("--nodes must be a finite number >= 1") and "divide" not in message


def test_a_config_error_has_no_pydantic_prefix(tmp_path):
    config = {
        "model_type": "llama",
        "hidden_size": 4000,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 11008,
        "num_hidden_layers": 16,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    message = refused("estimate", "--model", str(path), "--gpu", "h100-sxm", "--num-gpus", "8")
    assert "head_dim 125 is odd" in message and "Value error" not in message


def test_ddp_replicas_given_must_fill_the_world():
    """Finding 14: --dp-replicate 2 --sharding none on 16 GPUs became 16 replicas without a word."""
    ddp = (*ESTIMATE[:-1], "16", "--sharding", "none")
    message = refused(*ddp, "--dp-replicate", "2")
    assert "multiply to 2" in message and "--dp-replicate 2" in message and "--num-gpus 16" in message
    for flags, replicas in ((("--dp-replicate", "16"), 16), ((), 16)):
        code, stdout, stderr = run(*ddp, *flags, "--json")
        assert code == 0, stderr
        assert json.loads(stdout)["layout"]["dp_replicate"] == replicas


def test_hsdp_replicas_still_leave_the_rest_to_the_shards():
    code, stdout, stderr = run(*ESTIMATE, "--dp-replicate", "2", "--json")
    assert code == 0, stderr
    layout = json.loads(stdout)["layout"]
    assert (layout["dp_replicate"], layout["dp_shard"]) == (2, 4)


def test_learned_positions_are_not_called_context_extension():
    code, _, stderr = run(
        "estimate", "--model", "gpt3-125m", "--gpu", "h100-sxm", "--num-gpus", "1", "--seq-len", "8192"
    )
    assert code == 0, stderr
    (warning,) = [line for line in stderr.splitlines() if "max_position_embeddings 2048" in line]
    assert "learned" in warning and "untrained" in warning and "planned as context extension" not in warning
    code, _, stderr = run(*ESTIMATE, "--seq-len", "16384")
    assert code == 0 and "planned as context extension" in stderr  # RoPE: extension, as before


def test_top_lists_that_many_alternatives_after_the_marked_choice():
    """Finding 14: --top N printed N + 1 rows (the chosen plan unmarked among them); JSON has N."""
    code, stdout, stderr = run(*PLAN, "--top", "2")
    assert code == 0, stderr
    assert "the chosen plan and 2 alternatives (--top)" in stdout
    rows = [line for line in stdout.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["chosen", "1", "2"]
    code, stdout, _ = run(*PLAN, "--top", "2", "--json")
    assert len(json.loads(stdout)["alternatives"]) == 2


def test_gpus_help_says_what_a_bare_type_means():
    code, stdout, _ = run("plan", "--help")
    text = " ".join(re.sub(r"[│\s]+", " ", stdout).split())
    assert code == 0 and "bare" in text and f"default {DEFAULT_MAX_GPUS}" in text


def test_estimate_refuses_the_sequence_lengths_plan_refuses():
    # Before: estimate took --seq-len 1 (8 tokens per step) that plan refused below 16.
    for command in (ESTIMATE, PLAN):
        assert refused(*command, "--seq-len", "8").startswith("--seq-len must be a finite number >= 16 ")


def test_a_price_for_a_gpu_outside_the_inventory_is_refused():
    # Before: the price was read by nothing, without a word.
    message = refused(*PLAN, "--gpus", "h100-sxm=8", "--price", "a100-80gb-sxm=1")
    assert message == (
        "--price a100-80gb-sxm=1: a100-80gb-sxm is not among --gpus (h100-sxm); add it there or drop its price"
    )
    code, _, _ = run(*PLAN, "--gpus", "H100-SXM=8", "--price", "h100-sxm=1", "--top", "0")
    assert code == 0  # ids compare case-blind, as the catalog's


def test_a_batch_far_from_the_request_is_warned():
    code, out, err = run(*ESTIMATE, "--global-batch-tokens", "100")
    assert code == 0 and "(requested 100: nearest achievable" in out
    assert (
        "warning: --global-batch-tokens 100: this layout's batch is 32,768 tokens, 328x the request "
        "(at least micro-batch 1 x 4,096 tokens x 8 data-parallel ranks = 32,768)"
    ) in err
    code, _, err = run(*ESTIMATE, "--global-batch-tokens", "40000")
    assert code == 0 and "--global-batch-tokens" not in err


@pytest.mark.parametrize(
    ("path", "value", "broken"),
    [
        (("price_per_gpu_hour_usd",), 1.0, "estimate.cost_usd "),
        (("training_tokens",), 2e10, "training_tokens 20,000,000,000 at "),
        (("estimate", "time", "step_s"), 0.3, "estimate.throughput.tokens_per_s "),
    ],
)
def test_a_plan_whose_figures_were_edited_apart_is_refused(tmp_path, path, value, broken):
    # Trial s21: explain printed a hand-edited price, token budget or step time beside the old
    # cost, time and throughput as if they were one job's.
    plan_file = tmp_path / "plan.json"
    assert run(*ESTIMATE, "--tokens", "1e10", "--out", str(plan_file))[0] == 0
    assert run("explain", str(plan_file))[0] == 0
    edited = json.loads(plan_file.read_text())
    *parents, leaf = path
    node = edited
    for key in parents:
        node = node[key]
    node[leaf] = value
    plan_file.write_text(json.dumps(edited))
    for command in (("explain", str(plan_file)), ("emit", str(plan_file), "--out", str(tmp_path / "job"))):
        message = refused(*command)
        assert message.startswith(f"{plan_file}: inconsistent plan ({broken}") and "re-run estimate or plan" in message


def test_the_trials_wording_holds(tmp_path):
    # Trial s21, finding 11: "energy 0 kWh", "$0.91 ($0.78-$1)", "1,095.1 min" beside "18.3 hours",
    # an fp8 MFU without its peak, "(1 node(s)", a raw "[Errno 2]" for an --out that cannot be written.
    code, out, _ = run("estimate", "--model", "gpt3-125m", "--gpu", "h100-sxm", "--num-gpus", "1", "--tokens", "1e6")
    assert code == 0 and "(1 node)" in out and re.search(r"energy 0\.\d+ kWh", out)
    assert re.search(r"cost \$\d\.\d\d \(\$\d\.\d\d-\$\d\.\d\d\)", out)
    code, out, _ = run(*ESTIMATE, "--precision", "fp8")
    assert code == 0 and "(MFU and HFU of the bf16 peak)" in out
    plan_file = tmp_path / "p.json"
    assert run(*ESTIMATE, "--tokens", "4e9", "--out", str(plan_file))[0] == 0
    code, out, _ = run("explain", str(plan_file))
    cut = r"(, longer than the run: one checkpoint after [\d.]+ hours)?"  # review s33: a run under Young/Daly's
    assert code == 0 and re.search(rf"Young/Daly interval is [\d.]+ hours{cut}; .* a restart of [\d.]+ minutes", out)
    assert re.search(r"goodput [\d.]+%: the largest loss is [a-z -]+ \([\d.]+% of the wall time\)", out)
    missing = tmp_path / "no" / "p.json"
    assert refused(*ESTIMATE, "--out", str(missing)) == f"--out {missing}: No such file or directory"


def test_a_batch_in_scientific_notation_is_read_as_tokens_are():
    # Trial s22: "--global-batch-tokens 4e6" was "Input should be a valid integer", while
    # --tokens took 1e10.
    code, out, _ = run(*PLAN, "--global-batch-tokens", "4e6", "--gpus", "h100-sxm=8", "--top", "0")
    assert code == 0 and "(requested 4,000,000: nearest achievable" in out
    assert (
        refused(*ESTIMATE, "--global-batch-tokens", "4.5")
        == "--global-batch-tokens must be a whole number of tokens (got 4.5)"
    )
    assert refused(*ESTIMATE, "--global-batch-tokens", "0").startswith(
        "--global-batch-tokens must be a finite number >= 1"
    )

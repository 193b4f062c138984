"""The optimizer formats on the CLI (``--grad-reduce-in-bf16``, ``--precision-aware-optimizer``):
what they change, where Megatron-Core refuses them, and what a restacked plan says it dropped."""

from __future__ import annotations

import json

import pytest

from ui.cli import main


def _estimate(capsys, *args: str) -> dict:
    assert main(["estimate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# Llama 3 70B under Megatron-Core's distributed optimizer (ZeRO-1: the gradient buffer is whole).
LLAMA3_70B_CORE = ["--model", "llama3-70b", "--gpu", "h100-sxm", "--num-gpus", "64", "--tp", "4", "--pp", "2"]
LLAMA3_70B_CORE += ["--grad-accum", "8", "--sharding", "zero1", "--stack", "megatron-core"]


def test_bf16_gradients_halve_the_buffer_and_its_reduction(capsys):
    """Megatron's --grad-reduce-in-bf16 (NeMo's and Megatron-Bridge's FP8 recipes): the gradient
    buffer ZeRO-1 keeps whole is half its fp32 size, the data-parallel reduction moves half the
    bytes, and the JSON and the summary say which was estimated."""
    fp32 = _estimate(capsys, *LLAMA3_70B_CORE)
    bf16 = _estimate(capsys, *LLAMA3_70B_CORE, "--grad-reduce-in-bf16")
    grads = lambda e: e["memory"]["breakdown_gib"]["grads"]  # noqa: E731
    assert grads(bf16) == pytest.approx(grads(fp32) / 2)
    assert bf16["memory"]["reserved_gib"] < fp32["memory"]["reserved_gib"] - 0.3 * grads(fp32)
    dp_comm = lambda e: e["time"]["breakdown_s"]["dp_comm"]  # noqa: E731
    assert 0 < dp_comm(bf16) < 0.75 * dp_comm(fp32)
    assert bf16["optimizer_precision"]["grad_reduce_bf16"] is True
    assert fp32["optimizer_precision"]["grad_reduce_bf16"] is False
    assert main(["estimate", *LLAMA3_70B_CORE, "--grad-reduce-in-bf16"]) == 0
    assert "bf16 gradients" in capsys.readouterr().out


@pytest.mark.parametrize("stack", ["trainplan", "torchtitan", "deepspeed", "megatron-lm"])
def test_bf16_gradients_are_refused_off_megatron_in_one_line(capsys, stack):
    estimate = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8"]
    for command in (estimate, ["plan", "--model", "llama3-8b", "--tokens", "1e9"]):
        assert main([*command, "--stack", stack, "--grad-reduce-in-bf16"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--stack megatron-core" in err and f"(not {stack})" in err


def test_plan_searches_with_bf16_gradients_and_says_so_in_json(capsys):
    """The search scores its rows with the flag: each plan's gradients against its bf16 working
    weights (both whole under ZeRO-1, whatever layout each plan chose) are 1x in bf16, 2x in fp32."""
    args = ["plan", "--model", "llama3-8b", "--tokens", "1e10", "--gpus", "h100-sxm=16", "--stack", "megatron-core"]
    assert main([*args, "--json", "--grad-reduce-in-bf16"]) == 0
    bf16 = json.loads(capsys.readouterr().out)
    assert main([*args, "--json"]) == 0
    fp32 = json.loads(capsys.readouterr().out)
    assert bf16["optimizer_precision"]["grad_reduce_bf16"] is True
    assert fp32["optimizer_precision"]["grad_reduce_bf16"] is False
    memory = lambda answer: answer["plan"]["memory"]["breakdown_gib"]  # noqa: E731
    assert {bf16["plan"]["layout"]["sharding"], fp32["plan"]["layout"]["sharding"]} == {"zero1"}
    assert memory(bf16)["grads"] == pytest.approx(memory(bf16)["unsharded_params"])
    assert memory(fp32)["grads"] == pytest.approx(2 * memory(fp32)["unsharded_params"])


# NeMo's Nemotron-4 340B on 128 H100 (S13 row 355; issue 27): TP 8 x PP 8 x VPP 12, dp 2, FP8.
NEMOTRON_340B = ["--model", "nemotron4-340b", "--gpu", "h100-sxm", "--num-gpus", "128", "--tp", "8", "--pp", "8"]
NEMOTRON_340B += ["--vpp", "12", "--sharding", "zero1", "--seq-len", "4096", "--micro-batch", "1", "--grad-accum", "16"]
NEMOTRON_340B += ["--precision", "fp8", "--ac", "none", "--stack", "megatron-core"]


def test_nemotron_340b_fits_its_published_layout_with_its_recipes_optimizer(capsys):
    """Issue 27: Nemotron-4 340B at TP 8 x PP 8 x VPP 12 on 128 H100 estimates under megatron-core.
    With Megatron-Core's fp32 gradients and master weights it needs 86.8 GiB of 75.4; with bf16
    gradients and the precision-aware optimizer's 16-bit master remainders (its recipe's formats,
    the S13 row's) it fits, and the fix names both flags (neither alone fits it)."""
    default = _estimate(capsys, *NEMOTRON_340B)
    assert not default["feasible"] and "(--grad-reduce-in-bf16 --precision-aware-optimizer)" in default["fix"]
    recipe = _estimate(capsys, *NEMOTRON_340B, "--grad-reduce-in-bf16", "--precision-aware-optimizer")
    assert recipe["feasible"], recipe["reason"]
    assert recipe["optimizer_precision"] == {"grad_reduce_bf16": True, "param_remainders": True, "pure_bf16": False}
    states = lambda e: e["memory"]["breakdown_gib"]  # noqa: E731
    assert states(recipe)["params"] == pytest.approx(states(default)["params"] / 2)
    assert main(["estimate", *NEMOTRON_340B, "--grad-reduce-in-bf16", "--precision-aware-optimizer"]) == 0
    assert "bf16 gradients, master weights as remainders" in capsys.readouterr().out


@pytest.mark.parametrize("stack", ["megatron-lm", "torchtitan"])
def test_the_precision_aware_optimizer_is_refused_off_megatron_core_in_one_line(capsys, stack):
    estimate = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8"]
    assert main([*estimate, "--stack", stack, "--precision-aware-optimizer"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--stack megatron-core" in err and f"(not {stack})" in err


REFUSED = [
    (["--precision-aware-optimizer", "--sharding", "none"], "distributed optimizer", "now none"),
    (["--precision-aware-optimizer", "--precision", "fp16"], "bf16 weights", "now fp16"),
    (["--precision-aware-optimizer", "--precision", "fp32"], "bf16 weights", "now fp32"),
    (["--grad-reduce-in-bf16", "--precision", "fp32"], "bf16 weights", "now fp32"),
    (["--grad-reduce-in-bf16", "--precision", "fp16"], "bf16 weights", "now fp16"),
]


@pytest.mark.parametrize(("flags", "needs", "now"), REFUSED)
def test_formats_megatron_core_would_not_run_are_refused_in_one_line(capsys, flags, needs, now):
    """Review and trial s40: Megatron-Core asserts the distributed optimizer for its precision-aware
    optimizer, 16-bit remainders rebuild an fp32 master only beside bf16 weights, and the gradient
    buffer takes the weights' dtype: the saving was applied to DDP, fp16 and fp32 runs."""
    args = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8", "--tp", "2"]
    assert main([*args, "--stack", "megatron-core", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needs in err and now in err


def test_the_search_lists_no_layout_megatron_core_would_refuse_the_formats_on(capsys):
    args = ["plan", "--model", "llama3-8b", "--tokens", "1e11", "--gpus", "h100-sxm=8", "--stack", "megatron-core"]
    assert main([*args, "--precision-aware-optimizer", "--top", "8", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    plans = [answer["plan"], *answer["alternatives"]]
    assert len(plans) > 1 and all(p["layout"]["sharding"] != "none" for p in plans)


def test_explain_says_which_choices_another_stack_dropped(capsys, tmp_path):
    """Trial s40: explain --stack megatron-lm dropped --precision-aware-optimizer (and torchtitan both
    formats) unsaid, and the plan no longer fit."""
    out = tmp_path / "p.json"
    args = ["estimate", *NEMOTRON_340B, "--grad-reduce-in-bf16", "--precision-aware-optimizer", "--out", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["explain", str(out), "--stack", "megatron-lm"]) == 0
    err = capsys.readouterr().err
    for flag in ("--grad-reduce-in-bf16", "--precision-aware-optimizer"):
        assert f"the plan's {flag} is dropped: megatron-lm does not offer it" in err
    assert main(["explain", str(out)]) == 0
    assert "dropped" not in capsys.readouterr().err


def test_with_bf16_gradients_already_asked_the_fix_names_the_remainders_alone(capsys):
    """Review s40: the remainders-only fix was never exercised. Nemotron-4 340B with bf16 gradients
    still needs 76.1 GiB of 75.4; the 16-bit master remainders alone make it fit (70.7)."""
    bf16 = _estimate(capsys, *NEMOTRON_340B, "--grad-reduce-in-bf16")
    assert not bf16["feasible"]
    assert "keep the master weights as 16-bit remainders (--precision-aware-optimizer)" in bf16["fix"]
    assert "--grad-reduce-in-bf16" not in bf16["fix"]


# F59's command (torchtune's '+ Activation Checkpointing' row, data/validation/fresh_runs.csv)
TORCHTUNE_3B = ["--model", "llama3.2-3b", "--gpu", "a100-80gb-sxm", "--num-gpus", "1", "--stack", "torchtitan"]
TORCHTUNE_3B += ["--sharding", "none", "--micro-batch", "2", "--seq-len", "4096", "--compile", "--ac", "full"]


def test_pure_bf16_halves_the_states_and_says_so(capsys):
    """--pure-bf16 (torchtune's dtype: bf16): weights, gradients and AdamW's moments in bf16, the
    optimizer step half as long, the JSON and the summary saying it, the band outside the envelope."""
    mixed = _estimate(capsys, *TORCHTUNE_3B)
    pure = _estimate(capsys, *TORCHTUNE_3B, "--pure-bf16")
    states = lambda e: e["memory"]["breakdown_gib"]  # noqa: E731
    for key in ("params", "grads", "optimizer"):
        assert states(pure)[key] == pytest.approx(states(mixed)[key] / 2)
    # torchtitan's DDP is fully_shard at a shard degree of 1, whose copy stays beside bf16 weights too (review55)
    assert (
        states(pure)["unsharded_params"] == pytest.approx(states(mixed)["unsharded_params"])
        and states(pure)["unsharded_params"] > 0
    )
    optimizer = lambda e: e["time"]["breakdown_s"]["optimizer"]  # noqa: E731
    assert optimizer(pure) == pytest.approx(optimizer(mixed) / 2)
    assert pure["optimizer_precision"] == {"grad_reduce_bf16": False, "param_remainders": False, "pure_bf16": True}
    assert "pure_bf16" in pure["uncertainty"]["regime_features"]
    assert main(["estimate", *TORCHTUNE_3B, "--pure-bf16"]) == 0
    assert "pure bf16 (no fp32 master)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--stack", "megatron-core"], "not megatron-core's"),
        (["--stack", "deepspeed"], "not deepspeed's"),
        (["--precision", "fp8"], "use --precision bf16 (now fp8)"),
        (["--offload"], "drop --offload"),
    ],
)
def test_pure_bf16_is_refused_where_it_cannot_run_in_one_line(capsys, flags, said):
    args = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8", "--pure-bf16"]
    assert main([*args, *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err and "--pure-bf16" in err


def test_plan_refuses_pure_bf16_at_another_precision_in_one_line(capsys):
    """Trial bf16pure55: the search's empty table failed "cannot reshape array of size 0"."""
    args = ["plan", "--model", "llama3-8b", "--tokens", "1e10", "--gpus", "h100-sxm=8", "--precision", "fp8"]
    assert main([*args, "--pure-bf16"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "use --precision bf16 (now fp8)" in err


@pytest.mark.parametrize("flag", ["--precision-aware-optimizer", "--grad-reduce-in-bf16"])
def test_plan_refuses_megatrons_formats_at_fp16_in_one_line(capsys, flag):
    """s55: ``plan --precision fp16 --precision-aware-optimizer`` failed on the search's empty table
    ("cannot reshape array of size 0"), as --pure-bf16 had; the reason names the flag and the precision."""
    args = ["plan", "--model", "llama3-8b", "--tokens", "1e10", "--gpus", "h100-sxm=8", "--stack", "megatron-core"]
    assert main([*args, "--precision", "fp16", flag]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and "now fp16" in err and "reshape" not in err


def test_plan_refuses_pure_bf16_with_allow_offload_in_one_line(capsys):
    """review55 L3: ``plan --allow-offload --pure-bf16`` searched no offload row and did not say so."""
    args = ["plan", "--model", "llama3-8b", "--tokens", "1e10", "--gpus", "h100-sxm=8", "--pure-bf16"]
    assert main([*args, "--allow-offload"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "drop --allow-offload (or --pure-bf16)" in err

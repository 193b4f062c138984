"""The steps of estimate and plan (ui/cli_phases.py) keep each command's order: with two bad
inputs, the one a command checked first is the one its error names (review s49: the bodies were
split into named steps, and the order is what such a split most easily changes)."""

from __future__ import annotations

import pytest
from support.cli import assert_one_line, call

from planner.catalog.models import get_preset
from planner.model.stacks import Stack
from ui.cli_phases import read_model

ESTIMATE = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8"]
PLAN = ["plan", "--model", "llama3-8b", "--tokens", "1e12"]
MISSING_CALIBRATION = ["--calibration", "/nonexistent/calibration.toml"]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        # estimate: --num-gpus, then --tokens, then --seq-len; all before the model is read
        (
            ["estimate", "--model", "no-such-model", "--gpu", "h100-sxm", "--num-gpus", "0", "--tokens", "0"],
            "--num-gpus",
        ),
        ([*ESTIMATE, "--tokens", "0", "--seq-len", "1"], "--tokens must"),
        # plan: --tokens, then --max-gpus, then --seq-len
        (["plan", "--model", "llama3-8b", "--tokens", "0", "--max-gpus", "0"], "--tokens must"),
        ([*PLAN, "--max-gpus", "0", "--seq-len", "1"], "--max-gpus must"),
        # estimate: the recompute mode before the layout, the layout before the run-loss flags
        ([*ESTIMATE, "--ac", "blocks", "--tp", "3"], "--ac blocks needs --ac-blocks"),
        ([*ESTIMATE, "--tp", "3", "--failure-rate-x", "-1"], "is not divisible by"),
        # the calibration file is read before estimate's run-loss flags, after plan's
        ([*ESTIMATE, *MISSING_CALIBRATION, "--failure-rate-x", "-1"], "cannot read the calibration file"),
        ([*PLAN, *MISSING_CALIBRATION, "--failure-rate-x", "-1"], "--failure-rate-x must"),
        # plan: the prices against --gpus before the run-loss flags
        ([*PLAN, "--gpus", "h100-sxm", "--price", "a100-80gb-sxm=1", "--failure-rate-x", "-1"], "is not among --gpus"),
    ],
)
def test_the_first_bad_input_a_command_checks_is_the_one_named(argv: list[str], named: str) -> None:
    code, _, err = call(*argv)
    assert_one_line(code, err, named)


def test_read_model_runs_the_fork_where_the_stack_asked_for_refuses_the_model() -> None:
    """bloom-176b's ALiBi: megatron-lm's fork runs it, and its notice leads the warnings; a model
    the stack runs says nothing."""
    bloom = read_model("bloom-176b", Stack.MEGATRON_LM, 1, None, True)
    assert bloom.switch is not None and bloom.stack == bloom.switch.runs != Stack.MEGATRON_LM
    assert bloom.switch_words == (bloom.switch.words("bloom-176b"),)
    assert bloom.spec == get_preset("bloom-176b") and bloom.hf_path is None and bloom.calibration is None
    llama = read_model("llama3-8b", Stack.MEGATRON_LM, 1, None, True)
    assert (llama.stack, llama.switch, llama.switch_words) == (Stack.MEGATRON_LM, None, ())

"""The ``trainplan`` Typer app and the options its command modules share (ui/cli.py, ui/cli_jobs.py)."""

from __future__ import annotations

from enum import StrEnum

import typer

from planner.request import DEFAULT_SEQ_LEN

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Size, plan and run LLM training: GPUs, layout, memory, time and cost.",
)

JSON = typer.Option(False, "--json", help="machine-readable output")
CALIBRATION_HELP = (
    "a calibration file from trainplan calibrate: measured rates that replace the catalog's"
    " (default: ~/.config/trainplan/calibration.toml, or under $XDG_CONFIG_HOME, where it exists)"
)
IMPL_HELP = "default: native where trainplan's decoder builds the family (docs/models.md), else hf"
SEQ_LEN = typer.Option(
    None, "--seq-len", help=f"tokens per sequence; default {DEFAULT_SEQ_LEN}, or the model's context if shorter"
)
NO_CALIBRATION = typer.Option(False, "--no-calibration", help="ignore the default calibration file")
PRICE_KIND = typer.Option(
    None,
    "--price-kind",
    help="on-demand, spot, reserved-1y or reserved-3y: price each GPU at the median of its providers' offers of"
    " that kind (hw_catalog/prices; spot adds its interruptions to goodput); default: the catalog's price",
)
NETWORK = typer.Option(
    None,
    "--network",
    help="the scale-out network the nodes are on, a catalog id (trainplan catalog; e.g. ib-hdr-200, roce-400g,"
    " eth-100g, opa-4x100-per-8); default: each GPU's own (its reference server's)",
)
ATTENTION_HELP = (
    "attention kernel: sdpa-fa2, flash2, flash3 (Hopper), cudnn, triton (MPT's), eager; default: what the"
    " stack picks (cuDNN on H100/H200 and B200/GB200, sm90/sm100; FlashAttention-2 elsewhere, B300/GB300 included, and under PyTorch's context"
    " parallelism); a named kernel makes the plan an estimate"
)
PARTITION_ACTIVATIONS = typer.Option(
    False,
    "--partition-activations",
    help="Megatron-DeepSpeed's --partition-activations: each checkpointed block keeps 1/tp of its input and"
    " all-gathers it over tp before recomputing (--stack megatron-deepspeed only)",
)
AC_HELP = (
    "activation checkpointing: none; selective = every other block; full = every block; blocks = the first"
    " --ac-blocks blocks of each pp rank; attention = each block's attention sub-layer"
)
AC_BLOCKS = typer.Option(
    None,
    "--ac-blocks",
    help="blocks checkpointed per pp rank (implies --ac blocks); plan's default: the fewest that fit, per layout",
)
STACK_HELP = (
    "software to predict for: trainplan (runnable), or torchtitan / hf-trainer / deepspeed / llm-foundry /"
    " megatron-lm (2021-22: no flash attention) / megatron-deepspeed / megatron-core / deepseek-v3 (estimate"
    " only; docs/model.md 4b)"
)


def _hide_flag_type(display_type_rich):
    """Typer's rich help prints ``<bool>`` beside flags, which take no value (its plain help does not)."""

    def display(self, ctx):
        return None if self.is_flag or self.count else display_type_rich(self, ctx)

    return display


if hasattr(typer.core, "TyperOption") and hasattr(typer.core.TyperOption, "display_type_rich"):
    typer.core.TyperOption.display_type_rich = _hide_flag_type(  # type: ignore[method-assign]
        typer.core.TyperOption.display_type_rich
    )


class DeviceChoice(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"

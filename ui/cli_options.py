"""The ``trainplan`` Typer app and the options its command modules share (ui/cli.py, ui/cli_jobs.py)."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, TypedDict

import typer

from planner.catalog.prices import PRICE_KINDS
from planner.errors import RuleCode, rule_violation
from planner.fmt import one_line
from planner.layout import Precision, Sharding
from planner.model.stacks import DEEPSPEED_FSDP_WORD, Stack
from planner.request import DEFAULT_SEQ_LEN, DEFAULT_TOP_K
from planner.search.space import DEFAULT_MAX_GPUS
from ui.help_layout import install as install_help_layout
from ui.help_layout import short_metavar
from ui.inputs import Requirement, must_be, pydantic_requirement

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
IMPL_HELP = (
    "default: native where trainplan's decoder builds the family (docs/models.md), else hf; another --stack"
    " trains its own modules (another --impl is refused)"
)
SEQ_LEN = typer.Option(
    None, "--seq-len", help=f"tokens per sequence; default {DEFAULT_SEQ_LEN}, or the model's context if shorter"
)
NO_CALIBRATION = typer.Option(False, "--no-calibration", help="ignore the default calibration file")
# The job scripts' flags, apart in emit's and portfolio's --help (portfolio writes them only with --emit).
SCRIPTS_PANEL = "Job scripts (slurm.sbatch, k8s.yaml of the emitted jobs)"
K8S_IMAGE = typer.Option(
    None,
    "--k8s-image",
    help="container image in k8s.yaml (default: trainer/job_spec.py DEFAULT_K8S_IMAGE)",
    rich_help_panel=SCRIPTS_PANEL,
)
K8S_PVC = typer.Option(
    None,
    "--k8s-pvc",
    help="PersistentVolumeClaim k8s.yaml mounts at /jobs, holding the job dir",
    rich_help_panel=SCRIPTS_PANEL,
)
SLURM_GPU_TYPE = typer.Option(
    None,
    "--slurm-gpu-type",
    help="this site's GRES type of the plan's GPU: slurm.sbatch asks for --gpus-per-node=TYPE:G",
    rich_help_panel=SCRIPTS_PANEL,
)
SLURM_CONSTRAINT = typer.Option(
    None,
    "--slurm-constraint",
    help="Slurm node features slurm.sbatch asks for (--constraint)",
    rich_help_panel=SCRIPTS_PANEL,
)
SLURM_PARTITION = typer.Option(
    None,
    "--slurm-partition",
    help="Slurm partition(s) slurm.sbatch asks for (--partition; default: the cluster's)",
    rich_help_panel=SCRIPTS_PANEL,
)
SLURM_TIME = typer.Option(
    None,
    "--slurm-time",
    help="slurm.sbatch's --time per allocation, e.g. 2-00:00:00 (default: the plan's p80 plus the stop lead);"
    " a longer job requeues itself at the limit",
    rich_help_panel=SCRIPTS_PANEL,
)
K8S_GPU_PRODUCT = typer.Option(
    None,
    "--k8s-gpu-product",
    help="k8s.yaml's nodeSelector value of the GPU vendor's product label, nvidia.com/gpu.product or"
    " amd.com/gpu.product-name (default: the catalog GPU's, e.g. NVIDIA-H100-80GB-HBM3; none: no selector)",
    rich_help_panel=SCRIPTS_PANEL,
)
K8S_RDMA_RESOURCE = typer.Option(
    None,
    "--k8s-rdma-resource",
    help="NAME[=COUNT]: the RDMA device resource each pod requests, with IPC_LOCK, for NCCL over InfiniBand/RoCE"
    " (e.g. rdma/ib)",
    rich_help_panel=SCRIPTS_PANEL,
)


def _job_dir(value: str) -> Path:
    """A directory to write a job into, by name: an empty one (``--out "$JOB"`` with JOB unset) is
    refused. Typer's own Path made it Path(""), the current directory, and emit wrote the job there
    (review s49); the check in emit's body, on the Path, never saw the empty name."""
    if not value.strip():
        raise typer.BadParameter("give a directory name")
    return Path(value)


def _plan_file(value: str) -> Path:
    """A plan file to write, by name: an empty one is refused as ``_job_dir`` refuses it (review49
    L5: ``estimate --out ""`` said "--out .: Is a directory")."""
    if not value.strip():
        raise typer.BadParameter("give a file name")
    return Path(value)


def plan_out(help_text: str) -> Any:
    """estimate's and plan's ``--out``: the plan file, named (``_plan_file``)."""
    return typer.Option(None, "--out", parser=_plan_file, metavar="<path>", help=help_text)


# metavar: the <path> typer shows for a Path option (a parser's own type would show <Path>)
JOB_DIR = typer.Option(..., "--out", parser=_job_dir, metavar="<path>", help="job directory to write")
# portfolio's: the same refusal (review s49: --emit "" wrote every job's directory into the cwd)
EMIT_DIR = typer.Option(
    None,
    "--emit",
    parser=_job_dir,
    metavar="<path>",
    help="also write each job's directory, DIR/<job name>/, as trainplan emit does; the job scripts' GPU type,"
    " constraint, partition and product flags then take one value per GPU type: h100-sxm=h100,a100-80gb-sxm=a100",
)


class K8sNames(TypedDict, total=False):
    """emit_job's k8s keywords."""

    k8s_image: str
    k8s_pvc: str


def k8s_names(image: str | None, pvc: str | None) -> K8sNames:
    """emit_job's k8s keywords of the flags given (unset: JobSpec's defaults)."""
    names = K8sNames()
    if image is not None:
        names["k8s_image"] = image
    if pvc is not None:
        names["k8s_pvc"] = pvc
    return names


def _price_kind(value: str | None) -> str | None:
    """Refused as a bad ``--sharding`` is, naming the flag (PlanRequest's Literal names its field)."""
    if value is not None and value not in PRICE_KINDS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(map(repr, PRICE_KINDS))}.")
    return value


# DeepSpeed's name for full sharding, which its stacks' layouts print (Stack.fsdp_word)
SHARDING_ALIASES = {DEEPSPEED_FSDP_WORD: Sharding.FSDP}


def _sharding(value: str | None) -> Sharding | None:
    """``--sharding``: a Sharding, or DeepSpeed's ``zero3`` for fsdp (trial s34: a deepspeed layout
    printed "zero3", and the flag refused it)."""
    if value is None:
        return None
    if (alias := SHARDING_ALIASES.get(value)) is not None:
        return alias
    if value not in Sharding.__members__.values():
        names = [*Sharding, *SHARDING_ALIASES]
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(repr(str(n)) for n in names)}.")
    return Sharding(value)


SHARDING = typer.Option(
    None,
    callback=_sharding,
    metavar="[" + "|".join([*Sharding, *SHARDING_ALIASES]) + "]",
    help="none = DDP; zero1: optimizer states; zero2: + gradients; fsdp (or zero3): + parameters (default: fsdp;"
    " zero1 for the Megatron stacks and deepseek-v3, their distributed optimizer; zero2 for deepspeed at tp > 1)",
)
PRICE_KIND = typer.Option(
    None,
    "--price-kind",
    callback=_price_kind,
    help="on-demand, spot, reserved-1y or reserved-3y: price each GPU at the median of its providers' offers of"
    " that kind (hw_catalog/prices; spot adds its interruptions to goodput); default: the catalog's price",
)
TERM_FILLED = typer.Option(
    0.0,
    "--term-filled",
    min=0.0,
    max=1.0,
    help="under --price-kind reserved-1y or reserved-3y, the share of the term beyond the job that other work uses"
    " and pays: 0 (default) bills the job the whole term, 1 its own hours only",
)
NETWORK = typer.Option(
    None,
    "--network",
    help="the scale-out network the nodes are on, a catalog id (trainplan catalog; e.g. ib-hdr-200, roce-400g,"
    " eth-100g, opa-4x100-per-8); default: each GPU's own (its reference server's)",
)
GPUS = typer.Option(
    None,
    help="allowed GPU types, each with its inventory (h100-sxm=64) or bare (a100-80gb-sxm: no inventory, any count"
    f" up to --max-gpus, default {DEFAULT_MAX_GPUS} or the largest inventory given); default: every catalog type, bare; a comma list or the flag repeated",
)
TOP = typer.Option(
    DEFAULT_TOP_K,
    "--top",
    help="alternatives to list besides the chosen plan (the table's first row, marked 'chosen'; --json:"
    " 'alternatives' has them alone)",
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
MOE_A2A_OVERLAP = typer.Option(
    False,
    "--moe-a2a-overlap",
    help="Megatron-Core's --overlap-moe-expert-parallel-comm (Megatron-Bridge recipes' moe_a2a_overlap): each"
    " micro-batch's expert all-to-alls run under another micro-batch's compute (combined 1F1B schedule;"
    " --stack megatron-core only)",
)
TP_COMM_OVERLAP = typer.Option(
    True,
    "--tp-comm-overlap/--no-tp-comm-overlap",
    help="Megatron-Core's --tp-comm-overlap (TransformerEngine userbuffers), on as the NeMo / Megatron-Bridge"
    " recipes the megatron-core profile was fitted on run it; --no-tp-comm-overlap for a job that does not pass"
    " it (its TP collectives then hidden only as Megatron hides them without it; a regime no band row measured)."
    " --stack megatron-core only",
)
GRAD_REDUCE_BF16 = typer.Option(
    False,
    "--grad-reduce-in-bf16",
    help="Megatron-Core's --grad-reduce-in-bf16 (NeMo's and Megatron-Bridge's grad_reduce_in_fp32 off, as"
    " their FP8 performance recipes set it): gradient buffers and their data-parallel reductions in bf16,"
    " half the bytes of fp32 (--stack megatron-core, bf16 or fp8 weights)",
)
PARAM_REMAINDERS = typer.Option(
    False,
    "--precision-aware-optimizer",
    help="Megatron-Core's --use-precision-aware-optimizer (NeMo 2's bf16 performance recipes set it):"
    " TransformerEngine's FusedAdam keeps the fp32 master weights as 16-bit remainders beside the bf16"
    " weights (TE >= 2.1), 2 bytes a parameter instead of 4 (--stack megatron-core with its distributed"
    " optimizer, --sharding zero1 or more, and bf16 or fp8 weights)",
)
PURE_BF16 = typer.Option(
    False,
    "--pure-bf16",
    help="pure bf16: weights, gradients and AdamW's moments all bf16 and no fp32 master copy (2 + 2 + 4 bytes a"
    " parameter, not 4 + 4 + 8; the step streams half the bytes), as torchtune's dtype: bf16, torchtitan's"
    " training.dtype bfloat16 (its gradients reduced in fp32) and a Hugging Face model loaded in bf16 and trained"
    " without --bf16 run it; less precise updates than mixed precision. --stack trainplan, torchtitan or hf-trainer,"
    " --precision bf16, no offload; no band row ran it, so its band is widened",
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
    "software to predict for: trainplan (emit and run it), or torchtitan / hf-trainer / deepspeed / llm-foundry /"
    " megatron-lm (2021-22: no flash attention) / megatron-deepspeed (as BigScience ran it: CUDA_LAUNCH_BLOCKING=1)"
    " / megatron-core / deepseek-v3 (plan and"
    " estimate them; emit refuses them: docs/model.md 4b, DeepSeek-V3's 4c)"
)


# The options estimate and plan declare alike (ui/cli.py).
MODEL = typer.Option(..., help="preset name or path to a Hugging Face config.json")
PRECISION = typer.Option(Precision.BF16, help="training precision: " + ", ".join(Precision))
IMPL = typer.Option(None, help=IMPL_HELP)
STACK = typer.Option(Stack.TRAINPLAN, help=STACK_HELP)
ATTENTION = typer.Option(None, help=ATTENTION_HELP)
CALIBRATION = typer.Option(None, help=CALIBRATION_HELP)


def _hide_flag_type(display_type_rich):
    """Typer's rich help prints ``<bool>`` beside flags, which take no value (its plain help does not);
    a long choice list is shown by its option's name (ui/help_layout.py)."""

    def display(self, ctx):
        return None if self.is_flag or self.count else short_metavar(self.name, display_type_rich(self, ctx))

    return display


if hasattr(typer.core, "TyperOption") and hasattr(typer.core.TyperOption, "display_type_rich"):
    typer.core.TyperOption.display_type_rich = _hide_flag_type(  # type: ignore[method-assign]
        typer.core.TyperOption.display_type_rich
    )
install_help_layout()


class DeviceChoice(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


# --------------------------------------------------------------------------- errors in flags

# The request fields a flag of another name sets (every other field is its flag's dest).
FIELD_DESTS = {"top_k": "top", "price_overrides": "prices", "global_batch_tokens": "batch_tokens"}
# The planner's layout rules in the words of estimate's flags; the planner's sentence (which the app
# shows beside its own fields) names Layout's fields. A command without every flag a template
# names (explain, reading a plan file) keeps the planner's sentence.
FLAG_RULES = {
    RuleCode.DP_SHARD_ZERO: "--dp-shard must be >= 1, or -1 for the rest of the GPUs (got {dp_shard})",
    RuleCode.DDP_SHARD: "--sharding none (DDP) replicates: give --dp-replicate, not --dp-shard (got --dp-shard {dp_shard})",
    RuleCode.VPP_PP: "--vpp {vpp} (interleaved stages) needs --pp > 1 and --pp-schedule 1f1b (got --pp {pp})",
    RuleCode.EP_DDP: "--ep {ep} shards experts over the data-parallel ranks: use --sharding fsdp, zero1 or zero2, not none",
    RuleCode.WORLD_SIZE: "--num-gpus {gpus} is not divisible by --dp-replicate x --tp x --pp x --cp = {fixed}",
    RuleCode.DEGREES_PRODUCT: (
        "the degrees multiply to {product} (--dp-replicate {dp_replicate} x --dp-shard {dp_shard} x --tp {tp}"
        " x --pp {pp} x --cp {cp}), not --num-gpus {gpus}"
    ),
}
_FLAG = re.compile(r"--[a-z][a-z0-9-]*")


def invoked_command(args: list[str]):
    """The click command ``args`` names (None before a command)."""
    name = next((arg for arg in args if not arg.startswith("-")), None)
    return getattr(typer.main.get_command(app), "commands", {}).get(name)


def command_flags(command) -> dict[str, str]:
    """A click command's options by dest: ``{"micro_batch": "--micro-batch"}`` (its first long name)."""
    flags = {}
    for param in getattr(command, "params", ()):
        names = [opt for opt in getattr(param, "opts", ()) if opt.startswith("--")]
        if names and param.name:
            flags[param.name] = names[0]
    return flags


def flag_error(exc: BaseException, args: list[str]) -> str | None:
    """The one line of ``exc`` naming the flags of the command ``args`` runs: a pydantic error on a
    field a flag in ``args`` sets (``--micro-batch must be >= 1 (got 0)``; a field of a file the
    command reads keeps its name), or a layout rule of ``FLAG_RULES``; None for any other error,
    which keeps its own line (``planner.fmt.one_line``)."""
    flags = command_flags(invoked_command(args))
    violation = rule_violation(exc)
    if violation is not None:
        template = FLAG_RULES.get(violation.code)
        given = set(flags.values())
        if template is None or not set(_FLAG.findall(template)) <= given:
            return None
        return template.format(**violation.figures)
    errors = getattr(exc, "errors", None)  # a pydantic ValidationError
    found = errors() if callable(errors) else []
    loc = [str(part) for part in found[0].get("loc", ())] if found else []
    flag = flags.get(FIELD_DESTS.get(loc[0], loc[0])) if loc else None
    if flag is None or not any(arg == flag or arg.startswith(f"{flag}=") for arg in args):
        return None
    return value_error(" ".join([flag, *loc[1:]]), exc, found[0])


def value_error(what: str, exc: BaseException, error: Mapping[str, Any]) -> str:
    """The line of a pydantic error on the value of ``what`` (a flag, or a flag and a field):
    ``--steps must be >= 1 (got 0)`` (``ui.inputs.must_be``), else pydantic's own message."""
    ctx, got = error.get("ctx") or {}, error.get("input")
    if isinstance(ctx.get("error"), Requirement):  # the flag's own parser (sized_number)
        return must_be(what, str(ctx["error"]), got)
    requirement = pydantic_requirement(error)
    if requirement is not None:
        return must_be(what, requirement, got)
    if "expected" in ctx:  # a Literal or an enum: pydantic quotes the choices
        return must_be(what, ctx["expected"], repr(got))
    return f"{what}: {one_line(exc, where=False)}"


def flag_group(
    command: Callable[..., None],
    options: Mapping[str, Any],
    annotations: Mapping[str, str],
    keyword: str,
    collect: Callable[[dict[str, Any]], Any],
) -> Callable[..., None]:
    """``command`` with a table of flags among its options (``options``: parameter name -> typer.Option,
    ``annotations``: its type as a string), handed to it as one ``keyword``: ``collect`` of the values
    (name -> value, None where not given). The one mechanism behind emit's and portfolio's cluster
    flags (ui/cluster_flags.py) and the jobs file's keys as flags (ui/jobs_overrides.py)."""
    signature = inspect.signature(command)
    kept = [param for name, param in signature.parameters.items() if name != keyword]
    flags = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotations[name])
        for name, option in options.items()
    ]

    @functools.wraps(command)
    def with_flags(**given: Any) -> None:
        values = {name: given.pop(name) for name in options}
        command(**given, **{keyword: collect(values)})

    # Typer reads the options from the signature and resolves its annotations (strings here)
    with_flags.__signature__ = signature.replace(parameters=[*kept, *flags])  # type: ignore[attr-defined]
    kept_hints = {name: hint for name, hint in command.__annotations__.items() if name != keyword}
    with_flags.__annotations__ = kept_hints | dict(annotations)
    return with_flags

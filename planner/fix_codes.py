"""The next steps an estimate that does not fit suggests (``Estimate.fix_hints``): one code per
step and its English template (the CLI's words; the app words each code in the page's language,
ui/reasons.py ``fix_text``); split out of planner/rule_codes.py. Only the standard library."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum


class FixCode(StrEnum):
    """One member per next step an estimate that does not fit suggests (``Estimate.fix_hints``)."""

    SHARD_FSDP = "shard_fsdp"
    FSDP_GROUP = "fsdp_group"
    FSDP_GROUP_MORE_GPUS = "fsdp_group_more_gpus"
    FULL_AC = "full_ac"
    FULL_AC_PARTIAL = "full_ac_partial"  # full recomputation shrinks the need but not under the room
    FULL_AC_CP = "full_ac_cp"  # full recomputation and context parallelism together fit
    FULL_AC_CP_MORE_GPUS = "full_ac_cp_more_gpus"
    MICRO_BATCH = "micro_batch"
    TP = "tp"
    TP_MORE_GPUS = "tp_more_gpus"
    CP = "cp"
    CP_MORE_GPUS = "cp_more_gpus"
    PP = "pp"
    PP_MORE_GPUS = "pp_more_gpus"
    PP_STAGES = "pp_stages"  # on these GPUs, with the replicas folded: the stages the fold is for
    ONE_F_ONE_B = "one_f_one_b"
    BIGGER_GPU = "bigger_gpu"
    NO_ONE_FIX = "no_one_fix"  # past every catalog GPU's memory and no single change fits it
    HOST_OFFLOAD = "host_offload"
    COMPILE = "compile"  # torch.compile: a compiled loss holds fewer bytes a logit
    OFFLOAD = "offload"
    BF16_GRADS = "bf16_grads"  # Megatron's --grad-reduce-in-bf16
    PARAM_REMAINDERS = "param_remainders"  # Megatron-Core's --use-precision-aware-optimizer
    BF16_GRADS_AND_REMAINDERS = "bf16_grads_and_remainders"  # both
    PURE_BF16 = "pure_bf16"  # --pure-bf16: weights, gradients and AdamW moments in bf16, no fp32 master


# The hints of planner/model/memory_fixes.py memory_fix_hint and planner/model/host.py, byte for byte;
# ``Estimate.fix`` joins them with FIX_JOIN.
FIX_TEMPLATES: dict[FixCode, str] = {
    FixCode.SHARD_FSDP: "shard parameters, gradients and optimizer states with FSDP (sharding fsdp)",
    FixCode.FSDP_GROUP: "shard with FSDP over a group of at least {group} (dp_shard now {dp_shard})",
    FixCode.FSDP_GROUP_MORE_GPUS: (
        "shard with FSDP over a group of at least {group} (dp_shard now {dp_shard}) on {gpus} GPUs"
    ),
    FixCode.FULL_AC: "enable full activation checkpointing",
    FixCode.FULL_AC_PARTIAL: "enable full activation checkpointing, then more (alone it still needs {need:,.1f} GiB)",
    FixCode.FULL_AC_CP: (
        "enable full activation checkpointing and split each sequence over cp={cp} ranks (context parallelism,"
        " now {now})"
    ),
    FixCode.FULL_AC_CP_MORE_GPUS: (
        "enable full activation checkpointing and split each sequence over cp={cp} ranks (context parallelism,"
        " now {now}) on {gpus} GPUs"
    ),
    FixCode.MICRO_BATCH: "lower the micro-batch below {micro_batch}",
    FixCode.TP: "use tp={tp} (now {now})",
    FixCode.TP_MORE_GPUS: "use tp={tp} (now {now}) on {gpus} GPUs",
    FixCode.CP: "split each sequence over cp={cp} ranks (context parallelism, now {now})",
    FixCode.CP_MORE_GPUS: "split each sequence over cp={cp} ranks (context parallelism, now {now}) on {gpus} GPUs",
    FixCode.PP: "split the layers over more pipeline stages (pp > {pp})",
    FixCode.PP_MORE_GPUS: "split the layers over pp={stages} pipeline stages (now {pp}) on {gpus} GPUs",
    FixCode.PP_STAGES: "split the layers over pp={stages} pipeline stages (now {pp})",
    FixCode.ONE_F_ONE_B: "use the 1f1b pipeline schedule: it holds {pp} micro-batches' activations, GPipe all {accum}",
    FixCode.BIGGER_GPU: "use a GPU with more memory",
    FixCode.NO_ONE_FIX: (
        "no one change fits it, nor does any GPU ({times:,.1f}x the largest, {largest}): shorten the sequence, or"
        " combine checkpointing, sharding and tp/pp/cp"
    ),
    FixCode.HOST_OFFLOAD: "shard the offloaded states over more nodes, or keep them on the GPUs (no offload)",
    FixCode.COMPILE: "compile the model and its loss (--compile)",
    FixCode.OFFLOAD: "keep the optimizer states in host memory (--offload)",
    FixCode.BF16_GRADS: "keep Megatron's gradient buffers in bf16 (--grad-reduce-in-bf16)",
    FixCode.PARAM_REMAINDERS: "keep the master weights as 16-bit remainders (--precision-aware-optimizer)",
    FixCode.BF16_GRADS_AND_REMAINDERS: (
        "keep Megatron's gradient buffers in bf16 and the master weights as 16-bit remainders"
        " (--grad-reduce-in-bf16 --precision-aware-optimizer)"
    ),
    FixCode.PURE_BF16: (
        "train in pure bf16: weights, gradients and AdamW states in bf16, no fp32 master, which changes the"
        " updates' precision (--pure-bf16)"
    ),
}
FIX_JOIN = "; or "

# A tp, cp, pp or FSDP-group fix that runs with other data-parallel replicas than the layout's names
# them in this figure (and the layout's in ``dp_replicate_now``): planner/model/memory_fixes.py
# ``_replica_figures``.
REPLICAS_FIGURE = "dp_replicate"
# A fix on an HSDP layout that keeps its replicas but not its FSDP group names the group in this
# figure (and the layout's in ``dp_shard_now``): the user's --dp-shard, typed again beside the new
# degree, would be refused (s55: "split each sequence over cp=2 ranks" on dp_shard 32 x 2 replicas
# of 64 GPUs, where cp 2 keeps the 2 replicas with dp_shard 16).
GROUP_FIGURE = "group_dp_shard"
# Said after such a fix's own words (``with_replicas``): the replicas and the group it runs with (a tp,
# cp or pp fix keeps as many as fit, FitCheck.fitting_world; an FSDP-group fix folds as many as make
# the group, ``_sharding_hints``).
FIX_REPLICAS = (
    " with dp_replicate={dp_replicate} (now {dp_replicate_now}) and dp_shard={group_dp_shard} (now {dp_shard_now})"
)
# Said after a fix that keeps the replicas and changes the FSDP group (``GROUP_FIGURE``).
FIX_DP_SHARD = " with dp_shard={group_dp_shard} (now {dp_shard_now})"


def with_replicas(words: str, figures: Mapping[str, object], said: Callable[[str], str]) -> str:
    """A fix's ``words``, and after them the replicas and FSDP group it runs with where its
    ``figures`` name them: ``said(template)`` words FIX_REPLICAS or FIX_DP_SHARD (the English
    template, or the app's label of it). s54: "use tp=8 (now 1)" was named for a layout of 16
    replicas where tp 8 runs only without them."""
    if REPLICAS_FIGURE in figures:
        return words + said(FIX_REPLICAS)
    return words + said(FIX_DP_SHARD) if GROUP_FIGURE in figures else words

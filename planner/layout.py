"""Parallel layout and training settings shared by the planner and the trainer.

The device mesh is ``(pp, dp_replicate, dp_shard, cp, tp)`` (outermost first), as in
torchtitan's ``ParallelDims``: tp is innermost so that it stays inside one scale-up
domain, pp outermost so that its point-to-point traffic is the one that crosses nodes.
``-1`` for ``dp_shard`` means "whatever is left of the world size".

Expert parallelism (``ep``) adds no ranks: as in torchtitan, MoE experts are sharded over ranks
borrowed from the data-parallel shard and context-parallel dimensions. ``dp_shard x cp`` is
split into ``(dp_shard x cp / ep, ep)``, ep innermost (next to tp): each ep group holds one copy
of every expert, E/ep per rank, and FSDP shards each expert over the outer ``dp_shard x cp / ep``
ranks (torchtitan's ``dp_shard_mod_ep``). Each expert is split over tp like the dense MLP
(``expert_tp``, the trainer's mesh), or kept whole (``expert_tp`` off: expert tp 1, as Megatron-Core
recipes run it): then every tp rank routes its own sequence shard and ep borrows the tp ranks too,
``dp_shard x cp x tp = (expert shards, ep)``. The trainer builds expert tp only (native MoE
blocks refuse tp > 1, planner/model/structure.py); expert tp 1 is for estimates of other stacks.
"""

from __future__ import annotations

import math
from enum import StrEnum

import numpy as np
from pydantic import BaseModel, Field, model_validator

from planner.errors import RuleCode, RuleViolation
from planner.frozen import FROZEN


class Sharding(StrEnum):
    """How parameters, gradients and optimizer states are split over the data-parallel group."""

    NONE = "none"  # DDP: every rank holds everything
    ZERO1 = "zero1"  # optimizer states sharded
    ZERO2 = "zero2"  # + gradients sharded (FSDP2 with reshard_after_forward=False)
    FSDP = "fsdp"  # ZeRO-3: + parameters sharded; HSDP when dp_replicate > 1


class ActivationCheckpointing(StrEnum):
    NONE = "none"
    SELECTIVE = "selective"  # checkpoint every other block (torchtitan layer-selective AC, freq 2)
    FULL = "full"  # keep only each block's input, recompute the block
    # Checkpoint the first ``TrainingConfig.ac_blocks`` blocks of each pipeline rank (in stage
    # order under vpp: the first stage's hold the most micro-batches), keep the rest whole:
    # Megatron-LM's ``--recompute-method block --recompute-num-layers N`` (which counts per
    # virtual stage). The search picks the smallest N that fits (docs/model.md).
    BLOCKS = "blocks"
    # Recompute each block's attention sub-layer (QKV, core attention, output projection), keep
    # the MLP's activations: the attention module of every block checkpointed.
    ATTENTION = "attention"


class Precision(StrEnum):
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    FP32 = "fp32"


class Implementation(StrEnum):
    NATIVE = "native"  # trainplan's own Llama-family trainer
    HF = "hf"  # stock Hugging Face transformers model under FSDP2


class PipelineSchedule(StrEnum):
    ONE_F_ONE_B = "1f1b"
    GPIPE = "gpipe"


class MeshAxis(StrEnum):
    """Named dimensions of the device mesh, outermost first (the order of ``Layout.mesh_shape``
    and of the trainer's ``init_device_mesh``). Each is a ``Layout`` field of the same name."""

    PP = "pp"
    DP_REPLICATE = "dp_replicate"
    DP_SHARD = "dp_shard"
    CP = "cp"
    TP = "tp"
    # Borrowed from dp_shard x cp (module docstring): an axis of the experts' mesh, not of the world.
    EP = "ep"


# The world mesh's axes, outermost first (ep is carved out of dp_shard x cp, it adds no ranks).
WORLD_AXES = (MeshAxis.PP, MeshAxis.DP_REPLICATE, MeshAxis.DP_SHARD, MeshAxis.CP, MeshAxis.TP)


def ep_fits(ep, cp, dp_shard, token_split=1):
    """torchtitan's expert-parallel rule (torchtitan/distributed/parallel_dims.py, _validate):
    with expert tp = tp "EP would borrow all cp and some dp_shard degree", ep % cp == 0 and
    (dp_shard * cp) % ep == 0; with expert tp = 1 it borrows all of cp x tp too (``token_split``
    = tp / etp ranks that route their own tokens). Scalars or numpy arrays; ``Layout`` and the
    search both use it."""
    borrowed = cp * token_split
    return (ep == 1) | ((ep % borrowed == 0) & ((dp_shard * borrowed) % ep == 0))


# The degrees derived from a layout, written once for one ``Layout`` (ints) and the candidate
# table (numpy columns, planner/model/candidates.py) alike.


def shard_group_of(sharded, dp_shard, cp):
    """Ranks that shard one copy of the states (1 under DDP): the data-parallel shards and the
    context-parallel ranks, which hold the same weights (trainer/parallel.py's fsdp mesh;
    Megatron-Core's data-parallel group with context parallelism)."""
    return np.where(sharded, np.maximum(np.asarray(dp_shard) * cp, 1), 1)


def etp_of(expert_tp, tp):
    """Expert tensor-parallel degree: tp with expert tp, else 1 (whole experts)."""
    return np.where(expert_tp, tp, 1)


def expert_shard_group_of(shard_group, token_split, ep):
    """Ranks over which one expert's states are sharded (torchtitan's dp_shard_mod_ep;
    Megatron-Core's expert data-parallel group, dp x cp x tp / (ep x etp)): the shard group and
    the ``token_split`` = tp / etp ranks that route their own tokens, less the ep ranks."""
    return np.maximum(shard_group * token_split // ep, 1)


class Layout(BaseModel):
    """Degrees of each parallel axis. Validates itself; ``resolve`` fills ``-1``."""

    model_config = FROZEN

    dp_replicate: int = Field(1, ge=1)
    dp_shard: int = Field(-1, ge=-1)
    tp: int = Field(1, ge=1)
    pp: int = Field(1, ge=1)
    cp: int = Field(1, ge=1)
    sharding: Sharding = Sharding.FSDP
    pp_schedule: PipelineSchedule = PipelineSchedule.ONE_F_ONE_B
    # Virtual pipeline stages per rank (interleaved 1F1B, Narayanan et al. 2021 sec. 2.2.2):
    # each rank holds vpp non-adjacent chunks of layers; the bubble shrinks by vpp.
    vpp: int = Field(1, ge=1)
    # Expert-parallel degree: MoE experts split over ep ranks of the dp_shard x cp group.
    ep: int = Field(1, ge=1)
    # Experts split over tp like the dense MLP (expert tp = tp, trainer/parallel.py's mesh); False:
    # whole experts on each tp rank, which routes its own sequence shard and lends its rank to
    # ep (expert tp = 1: Megatron-Core's --expert-tensor-parallel-size 1, torchtitan's etp=1).
    expert_tp: bool = True

    @model_validator(mode="after")
    def _check(self) -> Layout:
        # -1 is the one non-positive degree: "the rest of the world size", filled by resolve().
        if self.dp_shard == 0:
            raise RuleViolation(RuleCode.DP_SHARD_ZERO, {"dp_shard": self.dp_shard})
        # Interleaving places vpp stages on each pp rank (trainer/pipeline.py local_stage_ids) and
        # the trainer runs them with torch's ScheduleInterleaved1F1B (build_pipeline_schedule).
        if self.vpp > 1 and (self.pp == 1 or self.pp_schedule != PipelineSchedule.ONE_F_ONE_B):
            raise RuleViolation(RuleCode.VPP_PP, {"vpp": self.vpp, "pp": self.pp})
        # DDP is FSDP2's replicate() over a 1-D mesh (trainer/parallel.py build_meshes): its ranks
        # are replicas; a shard degree would mean nothing.
        if self.sharding == Sharding.NONE and self.dp_shard not in (1, -1):
            raise RuleViolation(RuleCode.DDP_SHARD, {"dp_shard": self.dp_shard})
        # Experts sharded over ep are then FSDP-sharded over the rest of dp_shard x cp
        # (torchtitan's dp_shard_mod_ep mesh, trainer/parallel.py build_meshes); DDP's replicate()
        # has no such mesh.
        if self.ep > 1 and self.sharding == Sharding.NONE:
            raise RuleViolation(RuleCode.EP_DDP, {"ep": self.ep})
        if self.dp_shard > 0:
            self._check_ep()
        return self

    def _check_ep(self) -> None:
        """``ep_fits``: whole cp groups sit inside one ep group and ep groups tile dp_shard x cp."""
        split = self.expert_token_split
        if not bool(ep_fits(self.ep, self.cp, self.dp_shard, split)):
            group = self.dp_shard * self.cp * split
            if split == 1:
                raise RuleViolation(RuleCode.EP_FITS, {"ep": self.ep, "cp": self.cp, "group": group})
            raise RuleViolation(RuleCode.EP_FITS_TOKEN_SPLIT, {"ep": self.ep, "cp_tp": self.cp * split, "group": group})

    @property
    def pp_enabled(self) -> bool:
        return self.pp > 1

    @property
    def vpp_enabled(self) -> bool:
        return self.vpp > 1

    @property
    def dp_replicate_enabled(self) -> bool:
        return self.dp_replicate > 1

    @property
    def dp_shard_enabled(self) -> bool:
        """Only valid once resolved (``dp_shard`` may be -1 before)."""
        assert self.dp_shard > 0, "resolve() the layout first"
        return self.dp_shard > 1

    @property
    def fsdp_enabled(self) -> bool:
        """Parameters sharded (FSDP / HSDP, ZeRO-3)."""
        return self.sharding == Sharding.FSDP

    @property
    def hsdp_enabled(self) -> bool:
        return self.fsdp_enabled and self.dp_replicate_enabled

    @property
    def ep_enabled(self) -> bool:
        return self.ep > 1

    @property
    def cp_enabled(self) -> bool:
        return self.cp > 1

    @property
    def tp_enabled(self) -> bool:
        return self.tp > 1

    @property
    def non_dp(self) -> int:
        return self.tp * self.pp * self.cp

    @property
    def dp(self) -> int:
        """Data-parallel degree (replicas x shards); only valid once resolved."""
        assert self.dp_shard > 0, "resolve() the layout first"
        return self.dp_replicate * self.dp_shard

    @property
    def world_size(self) -> int:
        return self.dp * self.non_dp

    @property
    def shard_group(self) -> int:
        """``shard_group_of`` this layout."""
        return int(shard_group_of(self.sharding != Sharding.NONE, self.dp_shard, self.cp))

    @property
    def etp(self) -> int:
        """``etp_of`` this layout."""
        return int(etp_of(self.expert_tp, self.tp))

    @property
    def expert_token_split(self) -> int:
        """tp ranks that route their own sequence shard to the experts (tp / etp)."""
        return self.tp // self.etp

    @property
    def expert_shard_group(self) -> int:
        """``expert_shard_group_of`` this layout."""
        return int(expert_shard_group_of(self.shard_group, self.expert_token_split, self.ep))

    def resolve(self, world_size: int) -> Layout:
        """Return a copy with ``dp_shard`` made concrete; raise ValueError if degrees do not divide."""
        if world_size < 1:
            raise RuleViolation(RuleCode.WORLD_SIZE_MIN, {"gpus": world_size})
        fixed = self.dp_replicate * self.non_dp
        if self.dp_shard == -1:
            if world_size % fixed:
                raise RuleViolation(RuleCode.WORLD_SIZE, {"gpus": world_size, "fixed": fixed})
            rest = world_size // fixed
            if self.sharding == Sharding.NONE:
                # DDP: the leftover ranks are replicas, not shards.
                return self.model_copy(update={"dp_replicate": self.dp_replicate * rest, "dp_shard": 1})
            resolved = self.model_copy(update={"dp_shard": rest})
            resolved._check_ep()
            return resolved
        if fixed * self.dp_shard != world_size:
            degrees = {axis: getattr(self, axis) for axis in ("dp_replicate", "dp_shard", "tp", "pp", "cp")}
            product = fixed * self.dp_shard
            raise RuleViolation(RuleCode.DEGREES_PRODUCT, {"product": product, "gpus": world_size, **degrees})
        return self

    def mesh_shape(self) -> tuple[tuple[MeshAxis, int], ...]:
        """Named mesh axes, outermost first, degree-1 axes included (the trainer drops them)."""
        return tuple((axis, getattr(self, axis.value)) for axis in WORLD_AXES)

    def describe(self, fsdp_word: str = "fsdp") -> str:
        """'fsdp pp=2 dp_shard=4 tp=2 vpp=2'; ``fsdp_word``: what the stack calls full sharding
        (``Stack.fsdp_word``: DeepSpeed's ZeRO-3)."""
        parts = [f"{name}={deg}" for name, deg in self.mesh_shape() if deg != 1]
        parts += [f"vpp={self.vpp}"] if self.vpp_enabled else []
        parts += [f"ep={self.ep}"] if self.ep_enabled else []
        parts += ["etp=1"] if self.tp_enabled and not self.expert_tp else []
        full = self.sharding == Sharding.FSDP
        kind = "hsdp" if self.hsdp_enabled else fsdp_word if full else self.sharding.value
        return " ".join([kind, *parts]) if parts else f"{kind} (1 GPU)"


class TrainingConfig(BaseModel):
    """Per-step settings: batch shape, recompute, precision, implementation.

    With pipeline parallelism the ``grad_accum`` micro-batches of one step are the
    pipeline's micro-batches (so the bubble shrinks as accumulation grows).
    """

    model_config = FROZEN

    seq_len: int = Field(2048, ge=1)
    micro_batch: int = Field(1, ge=1)
    grad_accum: int = Field(1, ge=1)
    activation_checkpointing: ActivationCheckpointing = ActivationCheckpointing.NONE
    # Blocks checkpointed per pp rank under ``ActivationCheckpointing.BLOCKS`` (0 otherwise).
    ac_blocks: int = Field(0, ge=0)
    precision: Precision = Precision.BF16
    impl: Implementation = Implementation.NATIVE
    compile: bool = False
    offload: bool = False

    @model_validator(mode="after")
    def _check(self) -> TrainingConfig:
        if self.ac_blocks and self.activation_checkpointing != ActivationCheckpointing.BLOCKS:
            raise RuleViolation(
                RuleCode.AC_BLOCKS_MODE, {"blocks": self.ac_blocks, "mode": self.activation_checkpointing.value}
            )
        return self

    def describe_ac(self, pp: int = 1) -> str:
        """The recompute in words: the mode, with the checkpointed blocks (per pipeline rank where
        ``pp`` > 1) for ``blocks``."""
        if self.activation_checkpointing == ActivationCheckpointing.BLOCKS:
            return f"blocks ({self.ac_blocks}{' per pp rank' if pp > 1 else ''})"
        return self.activation_checkpointing.value

    def tokens_per_step(self, layout: Layout) -> int:
        """Global batch in tokens: micro_batch x seq x accumulation x data-parallel degree."""
        return self.micro_batch * self.seq_len * self.grad_accum * layout.dp

    @staticmethod
    def grad_accum_for(global_batch_tokens: int, micro_batch: int, seq_len: int, dp: int) -> int:
        """The accumulation whose batch is nearest the requested global batch (at least 1; a tie
        goes to the larger batch): exact whenever micro_batch * seq_len * dp divides it."""
        per_pass = micro_batch * seq_len * dp
        return max(1, math.floor(global_batch_tokens / per_pass + 0.5 + 1e-9))


# Context parallelism pays for long sequences: every degree from 16K tokens on, and cp 2 from 8K
# (MLPerf Training v5.x ran Llama 3.1 405B and 8B at CP 2 on 8,192-token sequences,
# data/validation/mlperf_runs.csv, layouts the search could not reach below 16K: trial s29b; the
# 8K degrees stop at 2, as each doubles the search's rows there). One rule for the search's degrees
# and the memory fixes it names (trial s47 L3: cp=16 on a 4K sequence, 256 tokens a rank, was named).
CP_MIN_SEQ_LEN = 16384
CP_SHORT_SEQ_LEN, CP_SHORT_MAX = 8192, 2


def cp_pays(seq_len: int, cp: int) -> bool:
    """Whether context-parallel degree ``cp`` > 1 is one to run at ``seq_len`` tokens (above)."""
    return seq_len >= CP_MIN_SEQ_LEN or (seq_len >= CP_SHORT_SEQ_LEN and cp <= CP_SHORT_MAX)


# Uneven pipeline stages. The embedding counts as PIPELINE_INPUT_WEIGHT blocks on the first
# stage and the final norm + LM head as PIPELINE_OUTPUT_WEIGHT blocks on the last (torchtitan's
# generate_llm_fqn_per_model_part, input_weight=output_weight=1, its defaults), so those stages
# may get fewer blocks. Llama 3 (Dubey et al. 2024, sec. 3.3.2) did the same: "reduce one
# Transformer layer each from the first and the last stages" (126 layers on 16 stages: 7, 8..., 7).
PIPELINE_INPUT_WEIGHT = 1
PIPELINE_OUTPUT_WEIGHT = 1


def max_pipeline_stages(num_layers: int) -> int:
    """The most stages (pp x vpp) a model cuts into: one weighted slot each, so the first stage
    may hold the embedding alone and the last the norm and head alone. Megatron-Core's
    ``account_for_embedding_in_pipeline_split`` / ``account_for_loss_in_pipeline_split`` do the
    same; the Megatron-Bridge Llama 3.1 405B recipes run 126 blocks on pp 16 x vpp 8 = 128 stages."""
    return num_layers + PIPELINE_INPUT_WEIGHT + PIPELINE_OUTPUT_WEIGHT


def extra_slot_order(num_stages: int) -> tuple[int, ...]:
    """Which stages take the remainder slots, in turn: the first, the last, then the second,
    third, ... (see ``stage_layer_counts``)."""
    middle = tuple(range(1, num_stages - 1))
    return (0,) + ((num_stages - 1,) if num_stages > 1 else ()) + middle


def stage_layer_counts(num_layers: int, num_stages: int) -> tuple[int, ...]:
    """Blocks on each of ``num_stages`` pipeline stages (``1 <= num_stages <= max_pipeline_stages``).

    The rule: ``num_layers + PIPELINE_INPUT_WEIGHT + PIPELINE_OUTPUT_WEIGHT`` weighted slots are
    split as evenly as possible (every stage ``slots // num_stages``); the first stage spends
    ``PIPELINE_INPUT_WEIGHT`` of its slots on the embedding, the last ``PIPELINE_OUTPUT_WEIGHT``
    on the norm and head. The ``slots % num_stages`` remainder goes to the stages of
    ``extra_slot_order``: the embedding and head stages first, then the second, third, ...
    torchtitan gives the remainder to the first stages instead (32 blocks on 8 stages: 4, 5, 4,
    ..., 3, whose 5-block stage is slower than the even split); this order minimises the largest
    stage's weighted load and keeps the even split whenever the layers divide (32 on 8: 4 each;
    126 on 16: 7, 8, ..., 8, 7 as Llama 3). Stage ``s`` holds the next ``counts[s]`` blocks
    (``stage_layer_ranges``).
    """
    if not 1 <= num_stages <= max_pipeline_stages(num_layers):
        raise RuleViolation(
            RuleCode.PP_STAGES_RANGE, {"stages": num_stages, "max_stages": max_pipeline_stages(num_layers)}
        )
    if num_stages == 1:
        return (num_layers,)
    base, extra = divmod(num_layers + PIPELINE_INPUT_WEIGHT + PIPELINE_OUTPUT_WEIGHT, num_stages)
    counts = [base] * num_stages
    for stage in extra_slot_order(num_stages)[:extra]:
        counts[stage] += 1
    counts[0] -= PIPELINE_INPUT_WEIGHT
    counts[-1] -= PIPELINE_OUTPUT_WEIGHT
    assert sum(counts) == num_layers and min(counts) >= 0, counts
    return tuple(counts)


def stage_layer_ranges(num_layers: int, num_stages: int) -> tuple[range, ...]:
    """The global block indices of each stage, consecutive, by ``stage_layer_counts``."""
    ranges, start = [], 0
    for count in stage_layer_counts(num_layers, num_stages):
        ranges.append(range(start, start + count))
        start += count
    return tuple(ranges)

"""A table of configurations to score: one row per (GPU, count, layout, batch, knobs).

The analytic model is written with numpy broadcasting over this table, so the same
formulas score one configuration (``trainplan estimate``) or a million (``trainplan plan``).
Each ``Layout`` and ``TrainingConfig`` field is one column (``KNOBS``, derived from the two
models' fields); enum-valued knobs are stored as small integer codes (``CODES`` maps them back).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any, TypedDict

import numpy as np
from pydantic import BaseModel

from planner.layout import (
    ActivationCheckpointing,
    Implementation,
    Layout,
    PipelineSchedule,
    Precision,
    Sharding,
    TrainingConfig,
    etp_of,
    expert_shard_group_of,
    shard_group_of,
)
from planner.model.attention_kernels import sdpa_prefers_cudnn, te_prefers_cudnn
from planner.model.busbw_curve import on_grid

SHARDING_CODES = (Sharding.NONE, Sharding.ZERO1, Sharding.ZERO2, Sharding.FSDP)
AC_CODES = tuple(ActivationCheckpointing)
PRECISION_CODES = (Precision.BF16, Precision.FP16, Precision.FP8, Precision.FP32)
IMPL_CODES = (Implementation.NATIVE, Implementation.HF)
SCHEDULE_CODES = (PipelineSchedule.ONE_F_ONE_B, PipelineSchedule.GPIPE)

CODES: dict[type, tuple] = {
    Sharding: SHARDING_CODES,
    ActivationCheckpointing: AC_CODES,
    Precision: PRECISION_CODES,
    Implementation: IMPL_CODES,
    PipelineSchedule: SCHEDULE_CODES,
}


def code(member: Sharding | ActivationCheckpointing | Precision | Implementation | PipelineSchedule) -> int:
    """The integer a candidate column stores for ``member`` (its place in ``CODES``)."""
    return CODES[type(member)].index(member)


# The codes the formulas compare columns with, named once from the tuples above.
SHARD_NONE, SHARD_ZERO1, SHARD_ZERO2, SHARD_FSDP = map(code, SHARDING_CODES)
AC_NONE, AC_SELECTIVE, AC_FULL, AC_BLOCKS, AC_ATTENTION = map(code, AC_CODES)
PREC_BF16, PREC_FP16, PREC_FP8, PREC_FP32 = map(code, PRECISION_CODES)
IMPL_NATIVE, IMPL_HF = map(code, IMPL_CODES)
SCHED_1F1B, SCHED_GPIPE = map(code, SCHEDULE_CODES)


def zero_over_one_rank(sharding, dp, cp) -> np.ndarray:
    """ZeRO-1 or ZeRO-2 (codes) over a shard group of one rank: it shards nothing (FSDP there is
    the trainer's one-rank mesh). The group is dp x cp ranks (``shard_group_of``: context-parallel
    ranks hold the same weights; trial s37: dp 1 x cp 8 under Megatron-Core's ZeRO-1 default was
    made DDP, 153 GiB where ZeRO-1 needs 66). The search drops such rows; an estimate's default
    sharding is none there instead (ui/inputs.py)."""
    sharding = np.asarray(sharding)
    alone = np.asarray(dp) * np.asarray(cp) == 1
    return (sharding != SHARD_NONE) & alone & (sharding != SHARD_FSDP)


# Candidate columns named other than their field (the formulas' short names).
COLUMN_NAMES = {"activation_checkpointing": "ac"}
# The knob columns the search rewrites row by row after generating them: the checkpointed blocks
# that fit each GPU (planner/model/partial_recompute.py, which re-keys those rows' ``layout_id``).
RECOMPUTE_KNOBS = ("ac", "ac_blocks")
REWRITTEN_COLUMNS = (*RECOMPUTE_KNOBS, "layout_id")


@dataclass(frozen=True)
class Knob:
    """One ``Layout`` / ``TrainingConfig`` field stored as a candidate column."""

    field: str
    column: str
    owner: type[BaseModel]
    kind: Any  # int, bool or an enum with codes in CODES

    def encode(self, value: Any) -> Any:
        return CODES[self.kind].index(value) if self.kind in CODES else value

    def decode(self, value: Any) -> Any:
        return CODES[self.kind][int(value)] if self.kind in CODES else self.kind(value)

    @property
    def default(self) -> Any:
        return self.encode(self.owner.model_fields[self.field].default)


KNOBS: tuple[Knob, ...] = tuple(
    Knob(name, COLUMN_NAMES.get(name, name), owner, info.annotation)
    for owner in (Layout, TrainingConfig)
    for name, info in owner.model_fields.items()
)


@dataclass(frozen=True)
class Candidates:
    """Struct of equal-length numpy arrays. Hardware columns are in SI units."""

    gpu_index: np.ndarray
    num_gpus: np.ndarray
    gpus_per_node: np.ndarray
    dp_replicate: np.ndarray
    dp_shard: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    sharding: np.ndarray
    pp_schedule: np.ndarray
    micro_batch: np.ndarray
    seq_len: np.ndarray
    grad_accum: np.ndarray
    ac: np.ndarray
    ac_blocks: np.ndarray  # blocks checkpointed per pp rank where ac is AC_BLOCKS
    precision: np.ndarray
    impl: np.ndarray
    compile: np.ndarray
    offload: np.ndarray
    # Virtual pipeline stages per rank (interleaved 1F1B).
    vpp: np.ndarray
    # Expert-parallel degree, borrowed from dp_shard x cp (planner/layout.py).
    ep: np.ndarray
    # bool: experts split over tp (expert tp = tp); False: whole experts, ep borrows tp too.
    expert_tp: np.ndarray
    # Rows of one id hold the same value in every knob column: the search generates a GPU type's
    # rows as copies of its shape's (planner/search/space.py) and gives rows whose recompute it
    # rewrites new ids, so memory is found once per id, not by comparing every knob column
    # (planner/model/rowwise.py ``key_columns``). A table made with other values in a knob column
    # (dataclasses.replace) keeps its ids only if each row's new value follows from its knobs
    # (moe.py's tp=etp); otherwise it needs new ones (``layout_id=np.arange(n)`` claims nothing).
    layout_id: np.ndarray
    # hardware, gathered per row
    memory_bytes: np.ndarray
    matmul_peak_flops: np.ndarray  # dense peak for the row's precision (tf32 for fp32)
    bf16_peak_flops: np.ndarray  # attention and MFU reference
    hbm_bandwidth: np.ndarray  # bytes/s
    # Achievable rates from the catalog (GPUSpec.rates); NaN: no data, the model's global
    # fraction of the datasheet figure applies (planner/model/rates.py).
    gemm_flops: np.ndarray  # large dense GEMM in the row's precision
    bf16_gemm_flops: np.ndarray  # the same in bf16 (the LM head of FP8 recipes)
    attention_fwd_flops: np.ndarray  # SDPA flash attention forward, head dim 128
    attention_bwd_flops: np.ndarray  # and backward (FLOPs counted as 2.5x the forward)
    cudnn_attention_fwd_flops: np.ndarray  # cuDNN fused flash attention, the same way
    cudnn_attention_bwd_flops: np.ndarray
    sdpa_cudnn: np.ndarray  # bool: SDPA runs cuDNN's attention on this GPU (attention_kernels.py)
    te_cudnn: np.ndarray  # bool: TransformerEngine does (attention_kernels.py)
    fp8_fast_accum: np.ndarray  # bool: FP8 GEMMs have a fast-accumulation mode (GPUSpec.fp8_fast_accumulation)
    copy_bandwidth: np.ndarray  # large device copy, bytes read + written per second
    # Measured collectives over the scale-up domain (GPUSpec.rates); NaN: the datasheet link
    # rate times scaleup_bandwidth_fraction and the model's step latency (planner/model/comm.py).
    scaleup_bus_bandwidth: np.ndarray  # bytes/s per GPU, ring bus bandwidth
    scaleup_step_latency: np.ndarray  # seconds per ring step
    # A measured job's corrections on this GPU (GPUSpec.measured_job); 1.0 without one.
    compute_time_factor: np.ndarray
    memory_factor: np.ndarray
    scaleup_bandwidth: np.ndarray  # bytes/s per GPU per direction
    scaleup_domain_size: np.ndarray
    pcie_bandwidth: np.ndarray  # bytes/s per GPU per direction: the card's host link
    network_bandwidth: np.ndarray  # bytes/s per GPU per direction, across nodes
    network_ring_bandwidth: np.ndarray  # a cross-node ring's measured bus bandwidth (NetworkSpec); NaN: none
    # The network's all-reduce bus bandwidth at busbw_curve.GRID_BYTES, one row per candidate
    # (NaN: none measured); zero columns where no row's network has one (the common case).
    network_busbw_curve: np.ndarray
    price_per_gpu_hour: np.ndarray
    price_estimated: np.ndarray  # bool: that price is an estimate, no listed offer (PriceBasis.ESTIMATE)
    rent_unit_gpus: np.ndarray  # GPUs rented together (GPUSpec); a job pays for whole units
    tdp_watts: np.ndarray
    node_power_w_per_gpu: np.ndarray  # server max wall power / GPUs (GPUSpec); NaN: planner/model/energy.py
    failure_rate_per_gpu_hour: np.ndarray  # NaN: the ModelingSettings default
    failure_rate_per_node_hour: np.ndarray  # of the GPU's default node template; NaN: the default
    preemptions_per_node_hour: np.ndarray  # of those, a spot price's preemptions (each waits for capacity)
    host_memory_bytes: np.ndarray  # host (CPU) memory per node (GPUSpec); NaN: the default
    host_memory_bandwidth: np.ndarray  # host DRAM bytes/s per node (GPUSpec); NaN: the default

    def __len__(self) -> int:
        return len(self.num_gpus)

    @property
    def dp(self) -> np.ndarray:
        return self.dp_replicate * self.dp_shard

    @property
    def shard_group(self) -> np.ndarray:
        return shard_group_of(self.sharding != SHARD_NONE, self.dp_shard, self.cp)

    @property
    def etp(self) -> np.ndarray:
        return etp_of(self.expert_tp, self.tp)

    @property
    def expert_token_split(self) -> np.ndarray:
        """tp ranks that route their own sequence shard (Layout.expert_token_split): tp / etp."""
        return self.tp // self.etp

    @property
    def expert_shard_group(self) -> np.ndarray:
        return expert_shard_group_of(self.shard_group, self.expert_token_split, self.ep)

    @cached_property  # read a few dozen times per scoring pass; num_gpus is never rewritten
    def num_nodes(self) -> np.ndarray:
        return np.maximum(1, -(-self.num_gpus // self.gpus_per_node))

    def knob_values(self, owner: type[BaseModel], row: int) -> dict[str, Any]:
        return {k.field: k.decode(getattr(self, k.column)[row]) for k in KNOBS if k.owner is owner}

    def layout(self, row: int) -> Layout:
        return Layout(**self.knob_values(Layout, row))

    def training(self, row: int) -> TrainingConfig:
        return TrainingConfig(**self.knob_values(TrainingConfig, row))

    @classmethod
    def from_columns(cls, size: int, **columns) -> Candidates:
        """A table from its columns; a scalar fills its column, and a knob left out takes its
        field's default (a knob the caller does not vary)."""
        for knob in KNOBS:
            columns.setdefault(knob.column, knob.default)
        columns.setdefault("layout_id", np.arange(size))  # every row its own: claims nothing
        return cls(**{name: np.full(size, v) if np.ndim(v) == 0 else v for name, v in columns.items()})


_unstored = {k.column for k in KNOBS} - {f.name for f in fields(Candidates)}
if _unstored:
    raise TypeError(f"Candidates has no column for the Layout/TrainingConfig field(s) {sorted(_unstored)}")


def matmul_peak(gpu, precision: Precision) -> float:
    """Dense tensor-core peak used for GEMMs: fp32 training runs its GEMMs as TF32."""
    key = "tf32" if precision == Precision.FP32 else precision.value
    return gpu.peak_flops(key)


def row_gather(gpu_index: np.ndarray, num_gpus: int):
    """``values[gpu_index]`` for per-GPU ``values``; where the rows come in runs of one GPU type
    (the search's table), repeated run by run: the same array, a third of the work."""
    gpu_index = np.asarray(gpu_index)
    if len(gpu_index) > 1 and (np.diff(gpu_index) >= 0).all():
        counts = np.bincount(gpu_index, minlength=num_gpus)
        return lambda values: np.repeat(values, counts)
    return lambda values: values[gpu_index]


def hardware_columns(
    gpus: list,
    gpu_index: np.ndarray,
    precision: np.ndarray,
    gpus_per_node: list[int],
    network_bandwidth: list[float],
    network_ring_bandwidth: list[float | None] | None = None,
    network_busbw_curve: list | None = None,
) -> dict[str, np.ndarray]:
    """Gather the per-GPU hardware numbers for each row (NaN peak = precision unsupported)."""
    peaks, gemm = _precision_rates(gpus)
    per_row = row_gather(gpu_index, len(gpus))
    col = lambda values: per_row(np.asarray(values, dtype=float))  # noqa: E731
    nan_if_none = lambda values: col([np.nan if v is None else v for v in values])  # noqa: E731
    return dict(
        gemm_flops=gemm[precision, gpu_index],
        bf16_gemm_flops=col([g.rates.gemm_flops_per_s.get("bf16", np.nan) for g in gpus]),
        attention_fwd_flops=nan_if_none([g.rates.attention_fwd_flops_per_s for g in gpus]),
        attention_bwd_flops=nan_if_none([g.rates.attention_bwd_flops_per_s for g in gpus]),
        cudnn_attention_fwd_flops=nan_if_none([g.rates.cudnn_attention_fwd_flops_per_s for g in gpus]),
        cudnn_attention_bwd_flops=nan_if_none([g.rates.cudnn_attention_bwd_flops_per_s for g in gpus]),
        sdpa_cudnn=per_row(np.array([sdpa_prefers_cudnn(g.compute_capability) for g in gpus])),
        te_cudnn=per_row(np.array([te_prefers_cudnn(g.compute_capability) for g in gpus])),
        fp8_fast_accum=per_row(np.array([g.fp8_fast_accumulation for g in gpus])),
        copy_bandwidth=nan_if_none([g.rates.copy_bandwidth_bytes_per_s for g in gpus]),
        scaleup_bus_bandwidth=nan_if_none([g.rates.scaleup_bus_bandwidth_bytes_per_s for g in gpus]),
        scaleup_step_latency=nan_if_none([g.rates.scaleup_step_latency_s for g in gpus]),
        compute_time_factor=col([g.measured_job.compute_time_factor if g.measured_job else 1.0 for g in gpus]),
        memory_factor=col([g.measured_job.memory_factor if g.measured_job else 1.0 for g in gpus]),
        memory_bytes=col([g.memory_bytes for g in gpus]),
        matmul_peak_flops=peaks[precision, gpu_index],
        bf16_peak_flops=col([g.peak_flops("bf16") for g in gpus]),
        hbm_bandwidth=col([g.hbm_bandwidth_bytes_per_s for g in gpus]),
        scaleup_bandwidth=col([g.scaleup_bandwidth_bytes_per_s for g in gpus]),
        scaleup_domain_size=per_row(np.asarray([g.scaleup_domain_size for g in gpus])),
        pcie_bandwidth=col([g.pcie_bandwidth_bytes_per_s for g in gpus]),
        network_bandwidth=col(network_bandwidth),
        network_ring_bandwidth=nan_if_none(network_ring_bandwidth or [None] * len(gpus)),
        network_busbw_curve=_curve_rows(network_busbw_curve or [None] * len(gpus), gpu_index),
        price_per_gpu_hour=col([g.price_per_gpu_hour_usd for g in gpus]),
        price_estimated=per_row(np.array([g.price_estimated for g in gpus], dtype=bool)),
        rent_unit_gpus=col([g.rent_unit_gpus for g in gpus]),
        tdp_watts=col([g.tdp_watts for g in gpus]),
        node_power_w_per_gpu=nan_if_none([g.node_power_w_per_gpu for g in gpus]),
        failure_rate_per_gpu_hour=col(
            [np.nan if g.failure_rate_per_gpu_hour is None else g.failure_rate_per_gpu_hour for g in gpus]
        ),
        failure_rate_per_node_hour=col(
            [np.nan if g.node_failure_rate_per_node_hour is None else g.node_failure_rate_per_node_hour for g in gpus]
        ),
        preemptions_per_node_hour=col([g.spot_preemptions_per_node_hour for g in gpus]),
        host_memory_bytes=nan_if_none([g.host_memory_bytes_per_node for g in gpus]),
        host_memory_bandwidth=nan_if_none([g.host_memory_bandwidth_bytes_per_s_per_node for g in gpus]),
        gpus_per_node=per_row(np.asarray(gpus_per_node)),
    )


def _curve_rows(curves: list, gpu_index: np.ndarray) -> np.ndarray:
    """Each row's network curve on the grid (busbw_curve.on_grid); (rows, 0) where none has one."""
    if all(curve is None for curve in curves):
        return np.zeros((len(gpu_index), 0))
    return np.stack([on_grid(curve) for curve in curves])[np.asarray(gpu_index)]


def _precision_rates(gpus: list) -> tuple[np.ndarray, np.ndarray]:
    """Per precision code and GPU ([precision, gpu]): the matmul peak (NaN: the precision
    unsupported) and the measured GEMM rate (NaN: none measured), FLOP/s."""

    def peak_table(prec: Precision) -> np.ndarray:
        out = []
        for gpu in gpus:
            try:
                out.append(matmul_peak(gpu, prec))
            except ValueError:
                out.append(np.nan)
        return np.array(out)

    peaks = np.stack([peak_table(p) for p in PRECISION_CODES])
    # fp16 GEMMs run at the bf16 rate; fp32 runs TF32, which no catalog entry measures.
    rate_key = {Precision.FP16: "bf16"}
    gemm = np.stack(
        [[g.rates.gemm_flops_per_s.get(rate_key.get(p, p.value), np.nan) for g in gpus] for p in PRECISION_CODES]
    )
    return peaks, gemm


class NetworkColumns(TypedDict):
    network_bandwidth: float
    network_ring_bandwidth: float | None
    network_busbw_curve: tuple[tuple[float, float], ...] | None


def network_columns(network) -> NetworkColumns:
    """``single``'s network arguments from a ``NetworkSpec``: its per-GPU line rate and the ring
    measured on it, if one was (review s32: a caller passing the rate alone dropped the ring)."""
    return NetworkColumns(
        network_bandwidth=network.bandwidth_bytes_per_s_per_gpu,
        network_ring_bandwidth=network.ring_bus_bandwidth_bytes_per_s,
        network_busbw_curve=network.allreduce_busbw_curve,
    )


def single(
    gpu,
    layout: Layout,
    training: TrainingConfig,
    *,
    gpus_per_node: int,
    network_bandwidth: float,
    num_gpus: int | None = None,
    network_ring_bandwidth: float | None = None,
    network_busbw_curve: tuple[tuple[float, float], ...] | None = None,
) -> Candidates:
    """A one-row table for one concrete configuration (layout must be resolved)."""
    knobs = {k.column: k.encode(getattr(layout if k.owner is Layout else training, k.field)) for k in KNOBS}
    precision = np.array([knobs["precision"]])
    hw = hardware_columns(
        [gpu],
        np.array([0]),
        precision,
        [gpus_per_node],
        [network_bandwidth],
        [network_ring_bandwidth],
        [network_busbw_curve],
    )
    return Candidates.from_columns(1, gpu_index=0, num_gpus=num_gpus or layout.world_size, **knobs, **hw)


def on_default_node(gpu, catalog, layout: Layout, training: TrainingConfig, num_gpus: int | None = None) -> Candidates:
    """``single`` on the GPU's catalog default node and network (``catalog``: a ``Catalog``): a
    published configuration on its GPU as the catalog sells it (the validation harness's rows)."""
    return single(
        gpu,
        layout,
        training,
        gpus_per_node=catalog.node(gpu.default_node).gpus_per_node,
        **network_columns(catalog.network(gpu.default_network)),
        num_gpus=num_gpus,
    )

"""A table of configurations to score: one row per (GPU, count, layout, batch, knobs).

The analytic model is written with numpy broadcasting over this table, so the same
formulas score one configuration (``trainplan estimate``) or a million (``trainplan plan``).
Enum-valued knobs are stored as small integer codes; ``CODES`` maps them back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.layout import (
    ActivationCheckpointing,
    Implementation,
    Layout,
    PipelineSchedule,
    Precision,
    Sharding,
    TrainingConfig,
)

SHARDING_CODES = (Sharding.NONE, Sharding.ZERO1, Sharding.ZERO2, Sharding.FSDP)
AC_CODES = (ActivationCheckpointing.NONE, ActivationCheckpointing.SELECTIVE, ActivationCheckpointing.FULL)
PRECISION_CODES = (Precision.BF16, Precision.FP16, Precision.FP8, Precision.FP32)
IMPL_CODES = (Implementation.NATIVE, Implementation.HF)
SCHEDULE_CODES = (PipelineSchedule.ONE_F_ONE_B, PipelineSchedule.GPIPE)

SHARD_NONE, SHARD_ZERO1, SHARD_ZERO2, SHARD_FSDP = range(4)
AC_NONE, AC_SELECTIVE, AC_FULL = range(3)
PREC_BF16, PREC_FP16, PREC_FP8, PREC_FP32 = range(4)
IMPL_NATIVE, IMPL_HF = range(2)
SCHED_1F1B, SCHED_GPIPE = range(2)


def shard_group(sharding, dp_shard, cp) -> np.ndarray:
    """Ranks that shard one copy of the states (1 under DDP): the data-parallel shards and the
    context-parallel ranks, which hold the same weights (trainer/parallel.py's fsdp mesh;
    Megatron-Core's data-parallel group with context parallelism). Layout.shard_degree is the
    same for one layout."""
    return np.where(np.asarray(sharding) == SHARD_NONE, 1, np.maximum(np.asarray(dp_shard) * cp, 1))


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
    precision: np.ndarray
    impl: np.ndarray
    compile: np.ndarray
    offload: np.ndarray
    # hardware, gathered per row
    memory_bytes: np.ndarray
    matmul_peak_flops: np.ndarray  # dense peak for the row's precision (tf32 for fp32)
    bf16_peak_flops: np.ndarray  # attention and MFU reference
    hbm_bandwidth: np.ndarray  # bytes/s
    scaleup_bandwidth: np.ndarray  # bytes/s per GPU per direction
    scaleup_domain_size: np.ndarray
    network_bandwidth: np.ndarray  # bytes/s per GPU per direction, across nodes
    price_per_gpu_hour: np.ndarray
    tdp_watts: np.ndarray
    # Virtual pipeline stages per rank; None (tables built without it) means 1 everywhere.
    vpp: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.vpp is None:
            object.__setattr__(self, "vpp", np.ones_like(self.num_gpus))

    def __len__(self) -> int:
        return len(self.num_gpus)

    @property
    def dp(self) -> np.ndarray:
        return self.dp_replicate * self.dp_shard

    @property
    def shard_group(self) -> np.ndarray:
        return shard_group(self.sharding, self.dp_shard, self.cp)

    @property
    def num_nodes(self) -> np.ndarray:
        return np.maximum(1, -(-self.num_gpus // self.gpus_per_node))

    def layout(self, row: int) -> Layout:
        return Layout(
            dp_replicate=int(self.dp_replicate[row]),
            dp_shard=int(self.dp_shard[row]),
            tp=int(self.tp[row]),
            pp=int(self.pp[row]),
            cp=int(self.cp[row]),
            sharding=SHARDING_CODES[int(self.sharding[row])],
            pp_schedule=SCHEDULE_CODES[int(self.pp_schedule[row])],
            vpp=int(self.vpp[row]),
        )

    def training(self, row: int) -> TrainingConfig:
        return TrainingConfig(
            seq_len=int(self.seq_len[row]),
            micro_batch=int(self.micro_batch[row]),
            grad_accum=int(self.grad_accum[row]),
            activation_checkpointing=AC_CODES[int(self.ac[row])],
            precision=PRECISION_CODES[int(self.precision[row])],
            impl=IMPL_CODES[int(self.impl[row])],
            compile=bool(self.compile[row]),
            offload=bool(self.offload[row]),
        )


def matmul_peak(gpu, precision: Precision) -> float:
    """Dense tensor-core peak used for GEMMs: fp32 training runs its GEMMs as TF32."""
    key = "tf32" if precision == Precision.FP32 else precision.value
    return gpu.peak_flops(key)


def hardware_columns(
    gpus: list, gpu_index: np.ndarray, precision: np.ndarray, gpus_per_node: list[int], network_bandwidth: list[float]
) -> dict[str, np.ndarray]:
    """Gather the per-GPU hardware numbers for each row (NaN peak = precision unsupported)."""

    def peak_table(prec: Precision) -> np.ndarray:
        out = []
        for gpu in gpus:
            try:
                out.append(matmul_peak(gpu, prec))
            except ValueError:
                out.append(np.nan)
        return np.array(out)

    peaks = np.stack([peak_table(p) for p in PRECISION_CODES])  # [precision, gpu]
    col = lambda values: np.asarray(values, dtype=float)[gpu_index]  # noqa: E731
    return dict(
        memory_bytes=col([g.memory_bytes for g in gpus]),
        matmul_peak_flops=peaks[precision, gpu_index],
        bf16_peak_flops=col([g.peak_flops("bf16") for g in gpus]),
        hbm_bandwidth=col([g.hbm_bandwidth_bytes_per_s for g in gpus]),
        scaleup_bandwidth=col([g.scaleup_bandwidth_bytes_per_s for g in gpus]),
        scaleup_domain_size=np.asarray([g.scaleup_domain_size for g in gpus])[gpu_index],
        network_bandwidth=col(network_bandwidth),
        price_per_gpu_hour=col([g.price_per_gpu_hour_usd for g in gpus]),
        tdp_watts=col([g.tdp_watts for g in gpus]),
        gpus_per_node=np.asarray(gpus_per_node)[gpu_index],
    )


def single(
    gpu,
    layout: Layout,
    training: TrainingConfig,
    *,
    gpus_per_node: int,
    network_bandwidth: float,
    num_gpus: int | None = None,
) -> Candidates:
    """A one-row table for one concrete configuration (layout must be resolved)."""
    one = lambda v: np.array([v])  # noqa: E731
    precision = one(PRECISION_CODES.index(training.precision))
    hw = hardware_columns([gpu], one(0), precision, [gpus_per_node], [network_bandwidth])
    return Candidates(
        gpu_index=one(0),
        num_gpus=one(num_gpus or layout.world_size),
        dp_replicate=one(layout.dp_replicate),
        dp_shard=one(layout.dp_shard),
        tp=one(layout.tp),
        pp=one(layout.pp),
        cp=one(layout.cp),
        sharding=one(SHARDING_CODES.index(layout.sharding)),
        pp_schedule=one(SCHEDULE_CODES.index(layout.pp_schedule)),
        micro_batch=one(training.micro_batch),
        seq_len=one(training.seq_len),
        grad_accum=one(training.grad_accum),
        ac=one(AC_CODES.index(training.activation_checkpointing)),
        precision=precision,
        impl=one(IMPL_CODES.index(training.impl)),
        compile=one(training.compile),
        offload=one(training.offload),
        vpp=one(layout.vpp),
        **hw,
    )

"""Published mixture-of-experts training runs against the model (held out: nothing is fitted on them).

Each row is a configuration a source states (model, GPUs, layout with its expert-parallel degree,
batch, precision) and the throughput it measured. ``compare_moe_runs`` predicts it with the
planner's ``score`` under the settings profile of its software stack, changed only where the
source states a fact the profile does not know (validation/moe_recipes.py). The rows and their
sources are listed in docs/validation.md ("Mixture-of-experts runs"); ``bench/validate_moe.py``
prints the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.hardware import Catalog, load_catalog
from planner.layout import ActivationCheckpointing, Layout, Precision, Sharding, TrainingConfig
from planner.model.candidates import on_default_node
from planner.model.estimate import score
from planner.model.stack_profiles import DEEPSEEK_V3_SETTINGS
from validation.moe_recipes import (
    BRIDGE_DEEPSEEK_V3,
    BRIDGE_GPT_OSS,
    BRIDGE_GPT_OSS_FLEX,
    BRIDGE_MOE_BENCHMARK,
    BRIDGE_MOE_FLEX,
    BRIDGE_QWEN3_235B_H100,
    DEEPSEEK_V3,
    DEEPSEEK_V3_REPORT,
    GPT_OSS_120B,
    MODELZOO_A2A_NORM_ACT,
    MODELZOO_DEEPEP,
    MODELZOO_DEEPEP_NORM_ACT,
    QWEN3_30B_A3B,
    QWEN3_235B_A22B,
    MoeRun,
    a2a_overlapped,
    bridge_run,
    h800,
    modelzoo_run,
    noted,
)

# DeepSeek-V3 pre-training: 14.8T tokens in 2,664K H800 GPU-hours (2.788M in all, less 119K for
# the context extension and 5K for post-training; report Table 1 and sec. 1), on 2,048 H800 with
# 16-way pipeline, 64-way expert (over 8 nodes) and ZeRO-1 data parallelism (sec. 3.2), FP8
# (sec. 3.3), 4K sequences, batch ramped to 15,360 sequences (sec. 4.2; the final batch is used).
DEEPSEEK_V3_TOKENS = 14.8e12
DEEPSEEK_V3_GPU_HOURS = 2_664_000

# The same archive's DGX-H100 rows of the later containers (26.02.01, 26.04, 26.04.01) for the
# same two models, added as measured (held out like the rest). The 26.02.01 Qwen3-30B-A3B row
# repeats the 26.02 layout in its columns (TP1 PP2 VP12 EP8) and measures 9,058 tokens/s/GPU where
# 26.02 measured 5,113; the patch release's recipe (v0.3.1, commit f29a269f8 "Update Qwen3 30B
# H100 Base Configs with HybridEP") ran H100 at PP1 EP16 with HybridEP and moe_a2a_overlap off,
# and 9,058 matches the 26.04 rows of that layout: the row is kept as its table states it. Left
# out: the 26.06 Qwen3 row (its FSDP column reads 1, a layout the nomenclature does not define)
# and 25.09's Qwen3 row (10,494 on the 25.11 layout, token-dropping, precision not stated). The
# Qwen3-235B-A22B rows are ``QWEN3_235B_RUNS``.
#
# The two slow Qwen3 rows (25.11: v0.2.0 workload_base_configs.py QWEN3_30B_A3B_H100_FP8_CS_BASE_
# CONFIG; 26.02: v0.3.0 qwen3_workload_base_configs.py ..._H100_FP8_CS_V1) are the only ones whose
# recipe turns on moe_a2a_overlap (overlap_moe_expert_parallel_comm + delay_wgrad_compute); 25.09
# (v0.1.0rc4 qwen3_30b_a3b_llm_pretrain.yaml), v0.3.1 and v0.4.0 run without it at about twice
# the throughput. Its host cost is what the maintainers disable it for ("Disable moe_a2a_overlap
# due to CPU overhead", NVIDIA-NeMo/Megatron-Bridge PR #1760); the model counts the all-to-all
# it hides (``a2a_overlapped``), not that cost.
# DGX-B200 rows of the 26.04 and 26.04.01 containers (v0.4.0 and v0.4.1 scripts/performance/configs/
# {qwen/qwen3,gpt_oss/gpt_oss}_workload_base_configs.py), one node of EP 8 each: Qwen3-30B-A3B
# B200_FP8_MX_V1 (= B200_BF16_V1: 8 GPUs, MBS 4, GBS 512, flex dispatcher with HybridEP, CUDA graphs
# of attn / moe_router / moe_preprocess, no recompute; MXFP8 read as the FP8 recipe, its block
# scales not modelled) and GPT-OSS-120B B200_BF16_V2 (64 GPUs, PP 1, EP 8, MBS 4, GBS 1280,
# HybridEP, recompute layernorm + moe_act, no CUDA graphs). The 26.02 rows are left out (their
# tables state EP 64 and MBS 1 layouts whose v0.3.x recipes differ).
# DGX-GB200 rows of the same containers, inside one NVL72 domain: Qwen3-30B-A3B GB200_FP8_MX_V1
# (8 GPUs, MBS 4, HybridEP, CUDA graphs of moe_router / moe_preprocess) and GPT-OSS-120B
# GB200_BF16_V2 (64 GPUs, EP 64, MBS 4, HybridEP, recompute layernorm + moe_act, and
# moe_a2a_overlap on). Left out: the 26.06 rows (v0.5.0 recipes: full-iteration CUDA graphs, the
# fused CuTe DSL grouped MLP and FP8 attention, none expressed here) and GB300 / B300 (not in the
# catalog).


# Qwen3-235B-A22B (the archive's rows, then the ModelZoo's). The archive: DGX-H100 FP8-CS, TP 2 PP 8
# VP 4 EP 32 with moe_a2a_overlap (H100_FP8_CS_V1/V2 of v0.2.0-v0.4.1), GBS 2048 in 25.11 and 8192
# after; DGX-B200 MXFP8, PP 8 EP 8 (B200_FP8_CS_V2, no VP, moe_a2a_overlap off); DGX-GB200 MXFP8,
# PP 8 EP 32, HybridEP, CUDA graphs of attn / moe_router / moe_preprocess (GB200_FP8_CS_V2; VP 3
# from v0.4.0, FP8_MX_V2). Left out: the 25.11 B200 and GB200 rows (other layouts and precisions,
# recipes not read), the 26.06 rows and GB300 / B300, as for the other models.
QWEN3_235B_RUNS: tuple[MoeRun, ...] = (
    *(
        a2a_overlapped(
            bridge_run(
                f"Qwen3-235B-A22B, {tag}",
                QWEN3_235B_A22B,
                256,
                8,
                4,
                32,
                gbs,
                1,
                True,
                tok,
                BRIDGE_QWEN3_235B_H100,
                tp=2,
            )
        )
        for tag, gbs, tok in (
            ("25.11", 2048, 1575),
            ("26.02", 8192, 1633),
            ("26.02.01", 8192, 1611),
            ("26.04", 8192, 1686),
            ("26.04.01", 8192, 1712),
        )
    ),
    *(
        bridge_run(
            f"Qwen3-235B-A22B, {tag}, B200",
            QWEN3_235B_A22B,
            256,
            8,
            1,
            8,
            8192,
            1,
            True,
            tok,
            BRIDGE_MOE_BENCHMARK,
            "b200",
        )
        for tag, tok in (("26.02", 3805), ("26.04.01", 3776))
    ),
    *(
        bridge_run(
            f"Qwen3-235B-A22B, {tag}, GB200",
            QWEN3_235B_A22B,
            256,
            8,
            vpp,
            32,
            8192,
            1,
            True,
            tok,
            BRIDGE_MOE_FLEX,
            "gb200",
        )
        for tag, vpp, tok in (("26.02", 1, 5448), ("26.02.01", 1, 5530), ("26.04", 3, 5672), ("26.04.01", 3, 5680))
    ),
    # The ModelZoo's table: DeepEP unless "A2A"; recompute "norm, act" (layernorm + moe_act) or full.
    modelzoo_run("Qwen3-235B-A22B, ModelZoo EP32", 2, 8, 4, 32, 1, 19.7, MODELZOO_DEEPEP_NORM_ACT),
    # A2A_OVERLAP=1 in sbatch_benchmarking.sh: --delay-wgrad-compute --overlap-moe-expert-parallel-comm.
    a2a_overlapped(
        modelzoo_run("Qwen3-235B-A22B, ModelZoo EP32 + 1F1B overlap", 2, 8, 4, 32, 1, 17.6, MODELZOO_DEEPEP_NORM_ACT)
    ),
    noted(
        modelzoo_run(
            "Qwen3-235B-A22B, ModelZoo EP8 FSDP",
            2,
            1,
            1,
            8,
            4,
            17.6,
            MODELZOO_DEEPEP,
            sharding=Sharding.FSDP,
            ac=ActivationCheckpointing.FULL,
        ),
        "Megatron-FSDP read as FSDP",
    ),
    modelzoo_run("Qwen3-235B-A22B, ModelZoo EP8 PP32 A2A", 2, 32, 3, 8, 1, 24.2, MODELZOO_A2A_NORM_ACT),
    modelzoo_run("Qwen3-235B-A22B, ModelZoo TP4 EP8", 4, 8, 4, 8, 1, 29.0, MODELZOO_DEEPEP),
)


# DeepSeek-V3 in the same archive (the ``deepseek-v3`` preset; BRIDGE_DEEPSEEK_V3), 256 GPUs, MXFP8
# read as FP8, MBS 1, GBS 4096 (the V2 recipes): DGX-GB200 TP 1 PP 4 VP 4 EP 64 (26.02 to
# 26.04.01), DGX-B200 PP 16 EP 8 (26.02 to 26.04). The recipes train one MTP module
# (mtp_num_layers 1), which the planner does not time; Megatron's pipeline layout for (4, 4) and
# (16, 1) puts 4 blocks on each virtual stage, the embedding with the first, the MTP module and the
# loss with the last (its one block), as the planner's uneven split gives 4 on the busiest. Left
# out: the 26.04.01 B200 row (its table states PP 8 VP 2 EP 32, its recipe v0.4.1 PP 16 EP 8), the
# DGX-H100 rows (1,024 GPUs, TP 2 with a custom pipeline layout) and the 26.06 rows.
DEEPSEEK_V3_BRIDGE_RUNS: tuple[MoeRun, ...] = (
    *(
        bridge_run(f"DeepSeek-V3, {tag}, GB200", DEEPSEEK_V3, 256, 4, 4, 64, 4096, 1, True, tok, settings, "gb200")
        for tag, tok, settings in (
            ("26.02", 3955, BRIDGE_DEEPSEEK_V3),
            ("26.02.01", 4021, BRIDGE_DEEPSEEK_V3),
            ("26.04", 4193, BRIDGE_MOE_FLEX),
            ("26.04.01", 4256, BRIDGE_MOE_FLEX),
        )
    ),
    *(
        bridge_run(
            f"DeepSeek-V3, {tag}, B200", DEEPSEEK_V3, 256, 16, 1, 8, 4096, 1, True, tok, BRIDGE_DEEPSEEK_V3, "b200"
        )
        for tag, tok in (("26.02", 2689), ("26.02.01", 2790), ("26.04", 2815))
    ),
)

MOE_RUNS: tuple[MoeRun, ...] = (
    a2a_overlapped(bridge_run("Qwen3-30B-A3B, 26.02", QWEN3_30B_A3B, 16, 2, 12, 8, 1024, 1, True, 5113)),
    a2a_overlapped(bridge_run("Qwen3-30B-A3B, 25.11", QWEN3_30B_A3B, 16, 2, 24, 8, 512, 2, True, 5275)),
    bridge_run("GPT-OSS-120B, 26.02", GPT_OSS_120B, 64, 4, 1, 8, 1280, 1, False, 5993, BRIDGE_GPT_OSS),
    noted(
        bridge_run("Qwen3-30B-A3B, 26.02.01", QWEN3_30B_A3B, 16, 2, 12, 8, 1024, 1, True, 9058),
        "the patch release's recipe (v0.3.1) states PP1 EP16 HybridEP, as the 26.04 rows",
    ),
    bridge_run("Qwen3-30B-A3B, 26.04", QWEN3_30B_A3B, 16, 1, 1, 16, 1024, 1, True, 8901, BRIDGE_MOE_FLEX),
    bridge_run("Qwen3-30B-A3B, 26.04.01", QWEN3_30B_A3B, 16, 1, 1, 16, 1024, 1, True, 8960, BRIDGE_MOE_FLEX),
    bridge_run("GPT-OSS-120B, 26.02.01", GPT_OSS_120B, 64, 4, 1, 8, 1280, 1, False, 5984, BRIDGE_GPT_OSS),
    bridge_run("GPT-OSS-120B, 26.04", GPT_OSS_120B, 64, 4, 1, 8, 1280, 1, False, 5810, BRIDGE_GPT_OSS),
    bridge_run("GPT-OSS-120B, 26.04.01", GPT_OSS_120B, 64, 4, 1, 8, 1280, 1, False, 5824, BRIDGE_GPT_OSS),
    bridge_run("Qwen3-30B-A3B, 26.04, B200", QWEN3_30B_A3B, 8, 1, 1, 8, 512, 4, True, 26859, BRIDGE_MOE_FLEX, "b200"),
    bridge_run(
        "Qwen3-30B-A3B, 26.04.01, B200", QWEN3_30B_A3B, 8, 1, 1, 8, 512, 4, True, 27136, BRIDGE_MOE_FLEX, "b200"
    ),
    bridge_run(
        "GPT-OSS-120B, 26.04, B200", GPT_OSS_120B, 64, 1, 1, 8, 1280, 4, False, 13045, BRIDGE_GPT_OSS_FLEX, "b200"
    ),
    bridge_run(
        "GPT-OSS-120B, 26.04.01, B200", GPT_OSS_120B, 64, 1, 1, 8, 1280, 4, False, 13568, BRIDGE_GPT_OSS_FLEX, "b200"
    ),
    bridge_run("Qwen3-30B-A3B, 26.04, GB200", QWEN3_30B_A3B, 8, 1, 1, 8, 512, 4, True, 26032, BRIDGE_MOE_FLEX, "gb200"),
    bridge_run(
        "Qwen3-30B-A3B, 26.04.01, GB200", QWEN3_30B_A3B, 8, 1, 1, 8, 512, 4, True, 26112, BRIDGE_MOE_FLEX, "gb200"
    ),
    a2a_overlapped(
        bridge_run(
            "GPT-OSS-120B, 26.04, GB200",
            GPT_OSS_120B,
            64,
            1,
            1,
            64,
            1280,
            4,
            False,
            15938,
            BRIDGE_GPT_OSS_FLEX,
            "gb200",
        )
    ),
    a2a_overlapped(
        bridge_run(
            "GPT-OSS-120B, 26.04.01, GB200",
            GPT_OSS_120B,
            64,
            1,
            1,
            64,
            1280,
            4,
            False,
            16640,
            BRIDGE_GPT_OSS_FLEX,
            "gb200",
        )
    ),
    MoeRun(
        "DeepSeek-V3 pre-training",
        DEEPSEEK_V3_REPORT,
        DEEPSEEK_V3,
        "h800",
        2048,
        Layout(dp_shard=128, pp=16, ep=64, sharding=Sharding.ZERO1),
        TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=120, precision=Precision.FP8),
        DEEPSEEK_V3_TOKENS / (DEEPSEEK_V3_GPU_HOURS * 3600.0),
        DEEPSEEK_V3_SETTINGS,
        note="in-house stack: DEEPSEEK_V3_SETTINGS (DualPipe overlap, 4-node routing, FP8 SwiGLU cache)",
    ),
    *QWEN3_235B_RUNS,
    *DEEPSEEK_V3_BRIDGE_RUNS,
)


@dataclass(frozen=True)
class MoeComparison:
    run: MoeRun
    predicted_tokens_per_s_per_gpu: float
    ep_comm_share: float  # exposed all-to-all time / step time, predicted
    fits: bool

    @property
    def error(self) -> float:
        measured = self.run.measured_tokens_per_s_per_gpu
        return (self.predicted_tokens_per_s_per_gpu - measured) / measured


def predict_moe_run(run: MoeRun, catalog: Catalog) -> MoeComparison:
    gpu = h800(catalog) if run.gpu == "h800" else catalog.gpu(run.gpu)
    c = on_default_node(gpu, catalog, run.layout.resolve(run.num_gpus), run.training)
    scores = score(run.model, c, run.settings)
    return MoeComparison(
        run=run,
        predicted_tokens_per_s_per_gpu=float(scores.tokens_per_s[0]) / run.num_gpus,
        ep_comm_share=float(scores.time.ep_comm[0] / scores.time.step[0]),
        fits=bool(scores.fits[0]),
    )


def compare_moe_runs(runs: tuple[MoeRun, ...] = MOE_RUNS, catalog: Catalog | None = None) -> list[MoeComparison]:
    catalog = catalog or load_catalog()
    return [predict_moe_run(run, catalog) for run in runs]

"""Published mixture-of-experts training runs against the model (held out: nothing is fitted on them).

Each row is a configuration a source states (model, GPUs, layout with its expert-parallel degree,
batch, precision) and the throughput it measured. ``compare_moe_runs`` predicts it with the
planner's ``score`` under the settings profile of its software stack, changed only where the
source states a fact the profile does not know (Megatron-Bridge force-balances the routed tokens
in its benchmarks: ``moe_token_imbalance = 1``). The rows and their sources are listed in
docs/validation.md ("Mixture-of-experts runs"); ``bench/validate_moe.py`` prints the table.

Qwen3-30B-A3B and DeepSeek-V3 are the catalog's presets (``qwen3-30b-a3b``, ``deepseek-v3``:
per-head q/k norms; multi-head latent attention, shared expert, dense first layers); GPT-OSS-120B,
which has no preset, is built here (``ModelSpec``) from its config.json.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.catalog.hardware import Catalog, GPUSpec, load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Implementation, Layout, Precision, Sharding, TrainingConfig
from planner.model.block_rows import Recompute
from planner.model.estimate import score
from planner.model.settings import DEEPSEEK_V3_SETTINGS, MEGATRON_CORE_SETTINGS, ModelingSettings
from planner.model.spec import ModelSpec
from planner.search.candidates import single

MEGATRON_BRIDGE_ARCHIVE = (
    "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md (DGX-H100, DGX-B200 and DGX-GB200 tables; "
    "'In MoE training benchmarks, we force-balance the token distribution among experts')"
)
DEEPSEEK_V3_REPORT = "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437"

MEGATRON_BRIDGE_RECIPES = (
    "NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/qwen3/qwen3_30b_a3b_llm_pretrain.yaml "
    "and the other MoE perf configs (grad_reduce_in_fp32: false; cross_entropy_fusion_impl: te; "
    "recompute_granularity: null), perf_recipes/*/common.py _perf_precision"
)

# Megatron-Bridge's benchmark recipes: Megatron-Core on TransformerEngine plus what the recipes
# state (MEGATRON_BRIDGE_RECIPES): routed tokens force-balanced; bf16 gradient buffers
# (grad_reduce_in_fp32 false); TransformerEngine's fused cross-entropy, whose kernel writes the
# loss gradient into the bf16 logits in place (4 bytes per logit: the logits plus one bf16
# temporary, ESTIMATE). Megatron-Core's persistent contiguous gradient buffer (no gradient churn
# reserved above the peak) is in MEGATRON_CORE_SETTINGS itself.
BRIDGE_MOE_BENCHMARK = MEGATRON_CORE_SETTINGS.but(
    moe_token_imbalance=1.0,
    grad_bytes=2.0,
    loss_bytes_per_logit=4.0,
)
# The recipes that state Megatron-Core's flex dispatcher with the HybridEP or DeepEP backend
# (moe_token_dispatcher_type "flex"): hierarchical dispatch. Megatron-Bridge v0.4.0 (26.04)
# scripts/performance/configs/qwen/qwen3_workload_base_configs.py, QWEN3_30B_A3B_PRETRAIN_CONFIG
# _H100_FP8_CS_V1: EP 16, moe_flex_dispatcher_backend "hybridep"; qwen3_llm_pretrain.py sets
# moe_token_dispatcher_type "flex". (v0.3.0, 26.02: "deepep" at EP 8, inside one node, where the
# dispatch is the same either way.)
BRIDGE_MOE_FLEX = BRIDGE_MOE_BENCHMARK.but(moe_hierarchical_dispatch=True)
# The GPT-OSS recipe recomputes the block norms and the expert activation (v0.3.0 scripts/
# performance/configs/gpt_oss/gpt_oss_workload_base_configs.py: recompute_modules ["layernorm",
# "moe_act"], granularity selective; the same in today's perf_recipes/gpt_oss/*/gpt_oss.py).
BRIDGE_GPT_OSS = BRIDGE_MOE_BENCHMARK.but(
    recompute_modules=frozenset({Recompute.LAYERNORM}), moe_recompute_activation=True
)
# ... and its Blackwell recipes (v0.4.0 B200_BF16_V2, GB200_BF16_V2) with the flex dispatcher on
# HybridEP, as BRIDGE_MOE_FLEX.
BRIDGE_GPT_OSS_FLEX = BRIDGE_GPT_OSS.but(moe_hierarchical_dispatch=True)

# The Qwen3-235B-A22B recipes (v0.2.0-v0.4.0 scripts/performance/configs/qwen*/qwen3_llm_pretrain.py
# qwen3_235b_a22b_pretrain_config_h100 / _b200): the alltoall dispatcher; on H100 no tp comm
# overlap (CommOverlapConfig(tp_comm_overlap=False)).
BRIDGE_QWEN3_235B_H100 = BRIDGE_MOE_BENCHMARK.but(tp_comm_overlap=0.0)

# yanring/Megatron-MoE-ModelZoo (Megatron-Core's MoE best practices): model_configs/benchmarking/
# Qwen3-235B-A22B.yaml and sbatch_benchmarking.sh: bf16 (Megatron-LM accumulates and reduces bf16
# gradients in fp32: the profile's default), TransformerEngine's fused cross-entropy (as the
# Bridge profile), --tp-comm-overlap for bf16 (the profile's fitted share), routing forced to
# balance (best_practice/qwen3/run_235b.sh's H100 baseline passes --moe-router-force-load-balancing,
# as every command of the repository does; its readme's table does not repeat it).
MODELZOO_A2A = MEGATRON_CORE_SETTINGS.but(moe_token_imbalance=1.0, loss_bytes_per_logit=4.0)
# ... with DeepEP (moe_token_dispatcher_type flex, backend deepep): hierarchical dispatch.
MODELZOO_DEEPEP = MODELZOO_A2A.but(moe_hierarchical_dispatch=True)
# --recompute-granularity selective --recompute-modules moe_act layernorm ("norm, act").
MODELZOO_DEEPEP_NORM_ACT = MODELZOO_DEEPEP.but(
    recompute_modules=frozenset({Recompute.LAYERNORM}), moe_recompute_activation=True
)
MODELZOO_A2A_NORM_ACT = MODELZOO_A2A.but(
    recompute_modules=frozenset({Recompute.LAYERNORM}), moe_recompute_activation=True
)

# Qwen/Qwen3-30B-A3B: the ``qwen3-30b-a3b`` preset (its config.json: 48 layers, hidden 2048, 32
# heads / 4 kv heads of 128 with per-head q/k RMSNorm, 128 experts of width 768, 8 per token,
# vocabulary 151936, untied).
QWEN3_30B_A3B = get_preset("qwen3-30b-a3b")
# openai/gpt-oss-120b config.json: 36 layers, hidden 2880, 64 heads / 8 kv heads of 64, 128 experts
# of width 2880, 4 per token, vocabulary 201088, attention biases, a 128-token sliding window on
# every other layer (layer_types: 18 of 36 "sliding_attention"), expert biases (116.83B parameters
# in all, as OpenAI's model card states). Not expressed: the router bias, the attention sinks
# (learnable softmax offsets) and the clamped SwiGLU.
GPT_OSS_120B = ModelSpec(
    name="gpt-oss-120b",
    family="mixtral",
    num_layers=36,
    hidden_size=2880,
    ffn_hidden_size=2880,
    num_heads=64,
    num_kv_heads=8,
    head_dim=64,
    vocab_size=201088,
    max_seq_len=131072,
    sliding_window=128,
    sliding_layers=18,
    qkv_bias=True,
    out_bias=True,
    mlp_bias=True,
    num_experts=128,
    experts_per_token=4,
)
# DeepSeek-V3: the ``deepseek-v3`` preset (deepseek-ai/DeepSeek-V3 config.json: 61 layers, hidden
# 7168, MLA with 128 heads and q/kv LoRA ranks 1536 / 512, 256 routed experts of width 2048, 8 per
# token, one shared expert, the first 3 layers dense of width 18432). Its multi-token-prediction
# module is trained too (report sec. 2.2, depth 1); the planner does not time it (docs/validation.md).
DEEPSEEK_V3 = get_preset("deepseek-v3")
# Qwen/Qwen3-235B-A22B: the ``qwen3-235b-a22b`` preset (94 layers, hidden 4096, 64 heads / 4 kv heads
# of 128 with per-head q/k norms, 128 experts of width 1536, 8 per token).
QWEN3_235B_A22B = get_preset("qwen3-235b-a22b")
MODELZOO_QWEN3 = "yanring/Megatron-MoE-ModelZoo best_practice/qwen3/readme.md (H100 table, 256 H100, BF16, GBS 2048)"


# H800: the H100 SXM with its NVLink cut to 400 GB/s bidirectional (200 GB/s per direction;
# DeepSeek-V3 report sec. 3.2.2 measures 160 GB/s of it), the same compute and HBM, and one
# 400 Gb/s InfiniBand NIC per GPU (the report's cluster, sec. 3.1).
H800_SCALEUP_BYTES_PER_S = 200e9


def h800(catalog: Catalog) -> GPUSpec:
    h100 = catalog.gpu("h100-sxm")
    sources = {**h100.sources, "scaleup_gbyte_per_s": f"H800 NVLink 400 GB/s bidirectional ({DEEPSEEK_V3_REPORT})"}
    return h100.model_copy(
        update={"id": "h800", "scaleup_bandwidth_bytes_per_s": H800_SCALEUP_BYTES_PER_S, "sources": sources}
    )


@dataclass(frozen=True)
class MoeRun:
    """One published configuration and what it measured (tokens/s per GPU)."""

    label: str
    source: str
    model: ModelSpec
    gpu: str  # catalog id, or "h800" (built from h100-sxm)
    num_gpus: int
    layout: Layout
    training: TrainingConfig
    measured_tokens_per_s_per_gpu: float
    settings: ModelingSettings
    note: str = ""


def _bridge(
    label: str,
    model,
    gpus: int,
    pp: int,
    vpp: int,
    ep: int,
    gbs: int,
    mbs: int,
    fp8: bool,
    tokens: float,
    settings: ModelingSettings = BRIDGE_MOE_BENCHMARK,
    gpu: str = "h100-sxm",
    tp: int = 1,
):
    """A Megatron-Bridge DGX row (``gpu``: DGX-H100 unless stated): TP 1 unless stated, CP 1,
    FSDP 0 (DDP with the distributed optimizer, the recipes' default: zero1), sequence length
    4096, expert tp 1 (every MoE recipe's ``expert_tensor_parallel_size=1``)."""
    dp = gpus // (pp * tp)
    layout = Layout(dp_shard=dp, tp=tp, pp=pp, vpp=vpp, ep=ep, expert_tp=False, sharding=Sharding.ZERO1)
    training = TrainingConfig(
        seq_len=4096,
        micro_batch=mbs,
        grad_accum=gbs // (mbs * dp),
        precision=Precision.FP8 if fp8 else Precision.BF16,
        impl=Implementation.NATIVE,
    )
    return MoeRun(label, MEGATRON_BRIDGE_ARCHIVE, model, gpu, gpus, layout, training, tokens, settings)


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
# it hides (``_a2a_overlapped``), not that cost.
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
A2A_OVERLAP_NOTE = "recipe: moe_a2a_overlap on: all-to-all under the other micro-batch's compute; its host cost (PR #1760) not modelled"


def _noted(run: MoeRun, note: str) -> MoeRun:
    return replace(run, note=note)


def _a2a_overlapped(run: MoeRun) -> MoeRun:
    """A recipe with moe_a2a_overlap (--overlap-moe-expert-parallel-comm --delay-wgrad-compute):
    Megatron-Core's combined 1F1B schedule runs one micro-batch's forward beside another's
    backward, layer by layer, and "EP A2A in forward step is hidden by the attention/mlp
    computation in the backward step, and vice versa" (megatron/core/pipeline_parallel/
    combined_1f1b.py at d98e8a6): the all-to-alls are exposed only beyond the compute
    (``ep_comm_overlap`` 1). The schedule's CPU overhead (Megatron-Bridge PR #1760) is not counted."""
    return replace(run, settings=run.settings.but(ep_comm_overlap=1.0), note=A2A_OVERLAP_NOTE)


def _modelzoo(label: str, tp: int, pp: int, vpp: int, ep: int, mbs: int, step_s: float, settings, **layout):
    """A row of the ModelZoo's H100 table (``MODELZOO_QWEN3``): Qwen3-235B-A22B on 256 H100, BF16,
    GBS 2048 of 4096 tokens, expert tp 1 (Qwen3-235B-A22B.yaml), distributed optimizer (zero1)
    unless stated; the table gives the step time."""
    dp = 256 // (tp * pp)
    ac = layout.pop("ac", None)
    shape = Layout(dp_shard=dp, tp=tp, pp=pp, vpp=vpp, ep=ep, expert_tp=False, **{"sharding": Sharding.ZERO1, **layout})
    training = TrainingConfig(
        seq_len=4096,
        micro_batch=mbs,
        grad_accum=2048 // (mbs * dp),
        precision=Precision.BF16,
        impl=Implementation.NATIVE,
        **({"activation_checkpointing": ac} if ac else {}),
    )
    tokens = 2048 * 4096 / step_s / 256
    return MoeRun(label, MODELZOO_QWEN3, QWEN3_235B_A22B, "h100-sxm", 256, shape, training, tokens, settings)


# Qwen3-235B-A22B (the archive's rows, then the ModelZoo's). The archive: DGX-H100 FP8-CS, TP 2 PP 8
# VP 4 EP 32 with moe_a2a_overlap (H100_FP8_CS_V1/V2 of v0.2.0-v0.4.1), GBS 2048 in 25.11 and 8192
# after; DGX-B200 MXFP8, PP 8 EP 8 (B200_FP8_CS_V2, no VP, moe_a2a_overlap off); DGX-GB200 MXFP8,
# PP 8 EP 32, HybridEP, CUDA graphs of attn / moe_router / moe_preprocess (GB200_FP8_CS_V2; VP 3
# from v0.4.0, FP8_MX_V2). Left out: the 25.11 B200 and GB200 rows (other layouts and precisions,
# recipes not read), the 26.06 rows and GB300 / B300, as for the other models.
QWEN3_235B_RUNS: tuple[MoeRun, ...] = (
    *(
        _a2a_overlapped(
            _bridge(
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
        _bridge(
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
        _bridge(
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
    _modelzoo("Qwen3-235B-A22B, ModelZoo EP32", 2, 8, 4, 32, 1, 19.7, MODELZOO_DEEPEP_NORM_ACT),
    # A2A_OVERLAP=1 in sbatch_benchmarking.sh: --delay-wgrad-compute --overlap-moe-expert-parallel-comm.
    _a2a_overlapped(
        _modelzoo("Qwen3-235B-A22B, ModelZoo EP32 + 1F1B overlap", 2, 8, 4, 32, 1, 17.6, MODELZOO_DEEPEP_NORM_ACT)
    ),
    _noted(
        _modelzoo(
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
    _modelzoo("Qwen3-235B-A22B, ModelZoo EP8 PP32 A2A", 2, 32, 3, 8, 1, 24.2, MODELZOO_A2A_NORM_ACT),
    _modelzoo("Qwen3-235B-A22B, ModelZoo TP4 EP8", 4, 8, 4, 8, 1, 29.0, MODELZOO_DEEPEP),
)


MOE_RUNS: tuple[MoeRun, ...] = (
    _a2a_overlapped(_bridge("Qwen3-30B-A3B, 26.02", QWEN3_30B_A3B, 16, 2, 12, 8, 1024, 1, True, 5113)),
    _a2a_overlapped(_bridge("Qwen3-30B-A3B, 25.11", QWEN3_30B_A3B, 16, 2, 24, 8, 512, 2, True, 5275)),
    _bridge("GPT-OSS-120B, 26.02", GPT_OSS_120B, 64, 4, 1, 8, 1280, 1, False, 5993, BRIDGE_GPT_OSS),
    _noted(
        _bridge("Qwen3-30B-A3B, 26.02.01", QWEN3_30B_A3B, 16, 2, 12, 8, 1024, 1, True, 9058),
        "the patch release's recipe (v0.3.1) states PP1 EP16 HybridEP, as the 26.04 rows",
    ),
    _bridge("Qwen3-30B-A3B, 26.04", QWEN3_30B_A3B, 16, 1, 1, 16, 1024, 1, True, 8901, BRIDGE_MOE_FLEX),
    _bridge("Qwen3-30B-A3B, 26.04.01", QWEN3_30B_A3B, 16, 1, 1, 16, 1024, 1, True, 8960, BRIDGE_MOE_FLEX),
    _bridge("GPT-OSS-120B, 26.02.01", GPT_OSS_120B, 64, 4, 1, 8, 1280, 1, False, 5984, BRIDGE_GPT_OSS),
    _bridge("GPT-OSS-120B, 26.04", GPT_OSS_120B, 64, 4, 1, 8, 1280, 1, False, 5810, BRIDGE_GPT_OSS),
    _bridge("GPT-OSS-120B, 26.04.01", GPT_OSS_120B, 64, 4, 1, 8, 1280, 1, False, 5824, BRIDGE_GPT_OSS),
    _bridge("Qwen3-30B-A3B, 26.04, B200", QWEN3_30B_A3B, 8, 1, 1, 8, 512, 4, True, 26859, BRIDGE_MOE_FLEX, "b200"),
    _bridge("Qwen3-30B-A3B, 26.04.01, B200", QWEN3_30B_A3B, 8, 1, 1, 8, 512, 4, True, 27136, BRIDGE_MOE_FLEX, "b200"),
    _bridge("GPT-OSS-120B, 26.04, B200", GPT_OSS_120B, 64, 1, 1, 8, 1280, 4, False, 13045, BRIDGE_GPT_OSS_FLEX, "b200"),
    _bridge(
        "GPT-OSS-120B, 26.04.01, B200", GPT_OSS_120B, 64, 1, 1, 8, 1280, 4, False, 13568, BRIDGE_GPT_OSS_FLEX, "b200"
    ),
    _bridge("Qwen3-30B-A3B, 26.04, GB200", QWEN3_30B_A3B, 8, 1, 1, 8, 512, 4, True, 26032, BRIDGE_MOE_FLEX, "gb200"),
    _bridge("Qwen3-30B-A3B, 26.04.01, GB200", QWEN3_30B_A3B, 8, 1, 1, 8, 512, 4, True, 26112, BRIDGE_MOE_FLEX, "gb200"),
    _a2a_overlapped(
        _bridge(
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
    _a2a_overlapped(
        _bridge(
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
    c = single(
        gpu,
        run.layout.resolve(run.num_gpus),
        run.training,
        gpus_per_node=catalog.node(gpu.default_node).gpus_per_node,
        network_bandwidth=catalog.network(gpu.default_network).bandwidth_bytes_per_s_per_gpu,
    )
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

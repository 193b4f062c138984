"""What the sources of the published MoE runs ran (validation/moe_runs.py holds the runs): the
settings profile of each recipe (Megatron-Bridge's benchmark recipes, Megatron-Core's MoE ModelZoo,
DeepSeek's report), the models the planner has no preset for, and the builders that turn a
source's table row into a trainplan layout. Each profile changes its stack's settings only where
the source states a fact the stack's profile does not know.

Qwen3-30B-A3B, Qwen3-235B-A22B and DeepSeek-V3 are the catalog's presets (per-head q/k norms;
multi-head latent attention, shared expert, dense first layers); GPT-OSS-120B, which has no preset,
is built here (``ModelSpec``) from its config.json.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.catalog.hardware import Catalog, GPUSpec
from planner.catalog.models import get_preset
from planner.layout import Implementation, Layout, Precision, Sharding, TrainingConfig
from planner.model.block_rows import Recompute
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.settings import ModelingSettings
from planner.model.shape import yarn_attention_factor
from planner.model.spec import ModelSpec
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS, moe_a2a_overlapped

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
BRIDGE_MOE_BENCHMARK = (
    OptimizerPrecision(grad_reduce_bf16=True)
    .applied(MEGATRON_CORE_SETTINGS)
    .but(
        moe_token_imbalance=1.0,
        loss_bytes_per_logit=4.0,
    )
)
# The recipes that state Megatron-Core's flex dispatcher with the HybridEP or DeepEP backend
# (moe_token_dispatcher_type "flex"): hierarchical dispatch. Megatron-Bridge v0.4.0 (26.04)
# scripts/performance/configs/qwen/qwen3_workload_base_configs.py, QWEN3_30B_A3B_PRETRAIN_CONFIG
# _H100_FP8_CS_V1: EP 16, moe_flex_dispatcher_backend "hybridep"; qwen3_llm_pretrain.py sets
# moe_token_dispatcher_type "flex". (v0.3.0, 26.02: "deepep" at EP 8, inside one node, where the
# dispatch is the same either way.)


def flex_dispatcher(settings: ModelingSettings) -> ModelingSettings:
    """Megatron-Core's flex dispatcher (HybridEP or DeepEP backend): hierarchical dispatch, and
    the experts get fp32 routing probabilities (both backends cast them: ``moe_probs_fp32``)."""
    return settings.but(moe_hierarchical_dispatch=True, moe_probs_fp32=True)


BRIDGE_MOE_FLEX = flex_dispatcher(BRIDGE_MOE_BENCHMARK)
# The GPT-OSS recipe recomputes the block norms and the expert activation (v0.3.0 scripts/
# performance/configs/gpt_oss/gpt_oss_workload_base_configs.py: recompute_modules ["layernorm",
# "moe_act"], granularity selective; the same in today's perf_recipes/gpt_oss/*/gpt_oss.py).
BRIDGE_GPT_OSS = BRIDGE_MOE_BENCHMARK.but(recompute_modules=frozenset({Recompute.LAYERNORM, Recompute.MOE_ACT}))
# ... and its Blackwell recipes (v0.4.0 B200_BF16_V2, GB200_BF16_V2) with the flex dispatcher on
# HybridEP, as BRIDGE_MOE_FLEX.
BRIDGE_GPT_OSS_FLEX = flex_dispatcher(BRIDGE_GPT_OSS)
# DeepSeek-V3's (scripts/performance/configs/deepseek/deepseek_workload_base_configs.py and
# deepseek_llm_pretrain.py, v0.3.0 to v0.4.1): HybridEP (flex), selective recompute of the MLA up
# projections (``mla_up_proj``: B200, and GB200 up to v0.3.1; from v0.4.0 GB200's FP8 recipe
# recomputes the dense MLP instead, ``mlp``, which the block table does not tag: the rows take no
# module recompute then, and the 3 dense blocks' MLP tensors count as saved).
BRIDGE_DEEPSEEK_V3 = BRIDGE_MOE_FLEX.but(recompute_modules=frozenset({Recompute.MLA_UP_PROJ}))

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
MODELZOO_DEEPEP = flex_dispatcher(MODELZOO_A2A)
# --recompute-granularity selective --recompute-modules moe_act layernorm ("norm, act").
MODELZOO_DEEPEP_NORM_ACT = MODELZOO_DEEPEP.but(recompute_modules=frozenset({Recompute.LAYERNORM, Recompute.MOE_ACT}))
MODELZOO_A2A_NORM_ACT = MODELZOO_A2A.but(recompute_modules=frozenset({Recompute.LAYERNORM, Recompute.MOE_ACT}))

# Qwen/Qwen3-30B-A3B: the ``qwen3-30b-a3b`` preset (its config.json: 48 layers, hidden 2048, 32
# heads / 4 kv heads of 128 with per-head q/k RMSNorm, 128 experts of width 768, 8 per token,
# vocabulary 151936, untied).
QWEN3_30B_A3B = get_preset("qwen3-30b-a3b")
# openai/gpt-oss-120b config.json: 36 layers, hidden 2880, 64 heads / 8 kv heads of 64, 128 experts
# of width 2880, 4 per token, vocabulary 201088, attention biases, a 128-token sliding window on
# every other layer (layer_types: 18 of 36 "sliding_attention"), expert biases (116.83B parameters
# in all, as OpenAI's model card states), the SwiGLU inputs clamped to 7 (``swiglu_limit``). Not
# expressed: the router bias and the attention sinks (learnable softmax offsets). RoPE: YaRN, factor
# 32 over 4,096 positions (``rope_scaling``), no mscale: its concentration factor.
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
    activation_clamp=7.0,
    rope_attention_factor=yarn_attention_factor(32.0),
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


def h800(catalog: Catalog) -> GPUSpec:
    """The H800 (hw_catalog/gpus/h800.toml): the H100 SXM with its NVLink cut to 400 GB/s
    bidirectional, one 400 Gb/s NIC per GPU (DeepSeek-V3 report sec. 3.1, 3.2.2)."""
    return catalog.gpu("h800")


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


def bridge_run(
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


A2A_OVERLAP_NOTE = "recipe: moe_a2a_overlap on: all-to-all under the other micro-batch's compute; its host cost (PR #1760) not modelled"


def noted(run: MoeRun, note: str) -> MoeRun:
    return replace(run, note=note)


def a2a_overlapped(run: MoeRun) -> MoeRun:
    """A recipe with moe_a2a_overlap (--overlap-moe-expert-parallel-comm --delay-wgrad-compute),
    timed as ``trainplan estimate --moe-a2a-overlap`` times it (planner/model/stack_profiles.py
    ``moe_a2a_overlapped``: the all-to-alls hidden under the other micro-batch's compute)."""
    return replace(run, settings=moe_a2a_overlapped(run.settings), note=A2A_OVERLAP_NOTE)


def modelzoo_run(label: str, tp: int, pp: int, vpp: int, ep: int, mbs: int, step_s: float, settings, **layout):
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

"""Published large-scale training runs (validation/published_rows.py reads them) against the model.

``compare_published`` scores every run with the planner's model under the settings profile of its
stack, plus what its source's recipes state (``recipe_settings``), and reports tokens/s per GPU
and TFLOP/s per GPU, the latter counted in the source's own convention, so both carry one error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.catalog.hardware import Catalog, load_catalog
from planner.layout import Sharding
from planner.model.attention_kernels import CudnnGeneration
from planner.model.candidates import Candidates, on_default_node
from planner.model.estimate import score
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.settings import ModelingSettings
from planner.model.stack_profiles import TE_FUSED_CE_BYTES_PER_LOGIT
from planner.model.stacks import STACK_SETTINGS as PROFILES
from planner.model.stacks import Stack as Profile
from validation.published_rows import (
    PublishedRun,
    Stack,
    comparability,
    flops_per_token,
)

# Each row's stack predicted with the planner's profile of it (``trainplan estimate --stack``).
STACK_SETTINGS = {
    Stack.MEGATRON_LM: PROFILES[Profile.MEGATRON_LM],
    Stack.MEGATRON_CORE: PROFILES[Profile.MEGATRON_CORE],
    Stack.DEEPSPEED: PROFILES[Profile.MEGATRON_LM],  # shown for reference only: the nearest kernels
    Stack.PYTORCH: PROFILES[Profile.TRAINPLAN],
}


# What the Megatron-Bridge performance recipes (S14, containers 25.09 to 26.06, all Llama) set on
# top of Megatron-Core. Recipe facts, so they stay with the rows, not in the stack profile:
# - bf16 gradient buffers, ``cfg.ddp.grad_reduce_in_fp32 = False`` in set_llama3_common_configs /
#   set_llama31_common_configs (scripts/performance/configs/llama/llama3_llm_pretrain.py,
#   llama31_llm_pretrain.py);
# - TransformerEngine's fused cross-entropy, ``cross_entropy_fusion_impl: "te"`` in every Llama
#   perf config since the 25.09 one (scripts/performance/configs/llama3/*.yaml, Megatron-Bridge
#   commit cac49dcd7; perf_recipes/_common.py ``_benchmark_common`` today).
MEGATRON_BRIDGE_FORMATS = OptimizerPrecision(grad_reduce_bf16=True)  # the CLI's --grad-reduce-in-bf16
MEGATRON_BRIDGE_RECIPE = dict(loss_bytes_per_logit=TE_FUSED_CE_BYTES_PER_LOGIT)


def megatron_bridge_settings(profile: ModelingSettings, offloaded_blocks: int) -> ModelingSettings:
    """``profile`` with the Megatron-Bridge recipes' facts (above) and their offloaded blocks."""
    return MEGATRON_BRIDGE_FORMATS.applied(profile).but(
        **MEGATRON_BRIDGE_RECIPE, offloaded_activation_blocks=offloaded_blocks
    )


# The Megatron-FSDP recipes offload activations to the host (``cpu_offloading_num_layers``), per
# (model, GPU): 70B FP8 on GB200 40 of 80 blocks (llama3_70b_llm_pretrain.yaml gb200 fp8_cs, 25.09;
# the same 40 in perf_recipes/llama/gb200/llama3.py today); 405B FP8 on GB200 95 of 126
# (llama31_405b_llm_pretrain.yaml gb200 fp8_cs, 25.09, the container of its only row).
MEGATRON_FSDP_OFFLOADED_BLOCKS = {("LLAMA3_70B", "gb200"): 40, ("LLAMA3.1_405B", "gb200"): 95}

# What NeMo 1.x's launcher recipes (the S13 rows of containers 24.03 and 24.07, run with
# NeMo-Framework-Launcher's launcher_scripts/conf/training/<family>/<size>.yaml, apex's
# DistributedFusedAdam, ``optim.name: distributed_fused_adam``) set on top of Megatron-Core.
# Recipe facts, read in the launcher at dbdb2355 (2024-07-30) and NeMo's
# megatron_base_model.py setup_optimization of that time:
# - the fp32 master weights kept as 16-bit remainders (setup_optimization forces the optimizer's
#   dtype to fp32 and, with bf16 weights, ``store_param_remainders``), every row;
# - bf16 gradient buffers where the model's config sets ``grad_sync_dtype: bf16``: gpt3/175b_fp8.yaml
#   (the table is FP8) and nemotron/nemotron_340b.yaml (whose ``dtype: bf16`` setup_optimization
#   overrides); the others reduce in fp32.
# The same widths as the CLI's --precision-aware-optimizer and --grad-reduce-in-bf16 (one rule:
# ``OptimizerPrecision.applied``).
NEMO_LAUNCHER_RELEASES = ("24.03", "24.07")
NEMO_LAUNCHER_BF16_GRADS = frozenset({"GPT3-175B", "Nemotron-340B"})


def nemo_launcher_recipe(run: PublishedRun) -> OptimizerPrecision:
    """The optimizer formats of an S13 row of NeMo 1.x's launcher (above)."""
    return OptimizerPrecision(grad_reduce_bf16=run.model_name in NEMO_LAUNCHER_BF16_GRADS, param_remainders=True)


def nemo_launcher_settings(run: PublishedRun, profile: ModelingSettings) -> ModelingSettings:
    """``profile`` with an S13 launcher row's formats. apex's DistributedFusedAdam is not Megatron-Core's
    precision-aware optimizer: whether it casts a bf16 gradient shard to fp32 at the step was not
    read, so the copy stays counted (``optimizer_copies_16bit_grads``)."""
    return nemo_launcher_recipe(run).applied(profile).but(optimizer_copies_16bit_grads=True)


# The NeMo containers of validation rows whose cuDNN is pinned at or below 9.1 (the 2024 generation
# measured, attention_kernels.CUDNN_9_1): NeMo 24.05 "is built on top of NVIDIA Optimized Frameworks
# PyTorch 24.02" and NeMo 24.07 lists the same PyTorch 2.3.0a0 (NeMo Framework user guide 24.09,
# Software Component Versions); NGC's builds moved to 2.4.0a0 in 24.05 (torch 2.4.0a0+07cecf4168
# .nv24.05), whose containers carry cuDNN 9.1.0.70 (the 24.05 Optimized Frameworks release notes),
# so a 2.3.0a0 base carries 9.1.0 or older; NeMo 24.03.01 predates both. Every other release (all
# later: 25.02 on for the Hopper rows) and a row without a named container run the catalog's 9.19
# (attention_kernels.CudnnGeneration says why for those in between).
CUDNN_9_1_RELEASES = ("24.03", "24.07")


def cudnn_generation_for(release: str) -> CudnnGeneration:
    """The cuDNN generation a row's container runs (above): 9.1 where its release pins one that old."""
    return CudnnGeneration.CUDNN_9_1 if release.startswith(CUDNN_9_1_RELEASES) else CudnnGeneration.CUDNN_9_19


def recipe_settings(run: PublishedRun, profile: ModelingSettings) -> ModelingSettings:
    """The row's stack profile with what its source's recipes and container state on top of it."""
    profile = profile.but(cudnn_generation=cudnn_generation_for(run.release))
    if run.source == "S13" and run.release.startswith(NEMO_LAUNCHER_RELEASES):
        return nemo_launcher_settings(run, profile)
    if run.source != "S14":
        return profile
    megatron_fsdp = run.layout.sharding == Sharding.FSDP
    offloaded = MEGATRON_FSDP_OFFLOADED_BLOCKS.get((run.model_name, run.gpu_id), 0) if megatron_fsdp else 0
    return megatron_bridge_settings(profile, offloaded)


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class PublishedComparison:
    run: PublishedRun
    predicted_tokens_per_s_per_gpu: float
    predicted_tflops_per_gpu: float | None  # in the source's convention
    fits: bool  # the memory model's verdict on the published layout
    excluded: str | None  # why not in the headline error

    @property
    def error(self) -> float:
        """Relative tokens/s error; identical to the TFLOP/s error in the source's convention."""
        measured = self.run.measured_tokens_per_s_per_gpu
        return (self.predicted_tokens_per_s_per_gpu - measured) / measured


def published_candidates(run: PublishedRun, catalog: Catalog) -> Candidates:
    """The one-row candidate table of the published configuration on its catalog GPU."""
    return on_default_node(
        catalog.gpu(run.gpu_id), catalog, run.layout.resolve(run.num_gpus), run.training, run.num_gpus
    )


def predict(run: PublishedRun, catalog: Catalog, settings: ModelingSettings) -> PublishedComparison:
    """Score the published configuration with the planner's model (``estimate.score``).

    ``estimate()`` refuses pipelines whose stages hold unequal layer counts; Megatron and Llama 3
    run exactly that (126 layers over pp=8 or 16, embedding and loss counted as layers), and the
    model already sizes the busiest stage as ceil(layers / pp).
    """
    scores = score(run.model, published_candidates(run, catalog), settings)
    tokens = float(scores.tokens_per_s[0]) / run.num_gpus
    per_token = flops_per_token(run)
    return PublishedComparison(
        run=run,
        predicted_tokens_per_s_per_gpu=tokens,
        predicted_tflops_per_gpu=None if per_token is None else tokens * per_token / 1e12,
        fits=bool(scores.fits[0]),
        excluded=comparability(run),
    )


def compare_published(
    runs: list[PublishedRun], profiles: dict[Stack, ModelingSettings] | None = None, catalog: Catalog | None = None
) -> list[PublishedComparison]:
    """Predict every run with the settings profile of its stack (``STACK_SETTINGS``, overridable)."""
    catalog = catalog or load_catalog()
    profiles = {**STACK_SETTINGS, **(profiles or {})}
    return [predict(run, catalog, recipe_settings(run, profiles[run.stack])) for run in runs]


def mean_abs_error(comparisons: list[PublishedComparison]) -> float:
    return sum(abs(c.error) for c in comparisons) / len(comparisons) if comparisons else math.nan

"""The software-stack profiles (``--stack``): what each stack changes in the analytic model.

The defaults (planner/model/settings.py ``DEFAULT_SETTINGS``) describe trainplan's own trainer;
each profile here changes only what its stack changes, each for the reason given beside it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

import numpy as np

from planner.layout import Implementation, Layout, Sharding
from planner.model.attention_kernels import AttentionKernel
from planner.model.block_rows import Recompute
from planner.model.candidates import AC_BLOCKS, AC_FULL, SHARD_FSDP, SHARD_ZERO1, code
from planner.model.settings import (
    DEEPSPEED_CPU_ADAM_BYTES_PER_PARAM,
    DEEPSPEED_CPU_ADAM_HOST_BANDWIDTH_FRACTION,
    DEFAULT_SETTINGS,
    ModelingSettings,
    with_attention,
)
from planner.model.zero_config import HF_DOCUMENTED_ZERO

# Megatron's vocabulary-parallel cross-entropy (megatron/core/tensor_parallel/cross_entropy.py,
# the same in Megatron-LM 2021-22): the bf16 logits of 1/tp of the vocabulary are cast to fp32
# once, then the max is subtracted, exponentiated and normalised in place (the softmax it saves),
# and the backward writes the gradient into that same fp32 buffer before the cast back to bf16
# for the output layer: 4 (fp32) + 2 (bf16 logits forward, bf16 gradient backward) bytes per logit.
MEGATRON_VOCAB_PARALLEL_CE_BYTES_PER_LOGIT = 6.0
# TransformerEngine's fused cross-entropy (transformer_engine/pytorch/triton/cross_entropy.py,
# Megatron's ``cross_entropy_fusion_impl="te"``): an online softmax over the bf16 logits, whose
# backward writes the gradient into the logits' own buffer; only 12 bytes per token beside them.
TE_FUSED_CE_BYTES_PER_LOGIT = 2.0

MEGATRON_LM_SETTINGS = DEFAULT_SETTINGS.but(
    # its optimizer offload keeps the gradient buffer on the GPU (ModelingSettings)
    offload_unsharded_grads=False,
    # Megatron-LM as in Narayanan et al. 2021 / Korthikanti et al. 2022 (A100, fp16): no flash
    # attention yet, so the s x s scores pass through HBM.
    flash_attention=False,
    # Apex/Megatron fused kernels (fused LayerNorm, bias-GeLU, bias-dropout-add, scale-mask-
    # softmax): about the traffic torch.compile leaves.
    elementwise_fusion_factor=DEFAULT_SETTINGS.compile_elementwise_factor,
    # No FSDP hooks or HF module overhead: ~60 kernel launches per block forward + backward at
    # ~15 us of PyTorch dispatch each.
    host_overhead_per_block_s=1.0e-3,
    # Its DistributedDataParallel all-reduced gradients after the backward (overlap arrived with
    # Megatron-Core's --overlap-grad-reduce), and tensor-parallel all-reduces sat on the
    # critical path (no TP overlap before TransformerEngine userbuffers).
    dp_comm_overlap=0.0,
    tp_comm_overlap=0.0,
    # Vocabulary-parallel cross-entropy in fp32 over the full local logits, in place ...
    loss_chunk_tokens=0,
    loss_bytes_per_logit=MEGATRON_VOCAB_PARALLEL_CE_BYTES_PER_LOGIT,
    # ... gradients in one contiguous buffer allocated at model wrap (no per-step churn) ...
    reserve_static_fraction=0.0,
    # ... and Korthikanti et al.'s sequence-parallel linears, which keep their 1/tp sequence
    # shard for the weight gradient and all-gather it again in backward (their sec. 4.2.2) ...
    sp_saves_gathered_inputs=False,
    # ... and their selective recompute of the unfused attention core, which keeps no scores
    # (the rows without full recompute run it: Korthikanti et al. 2022, Table 4 "present work").
    recompute_attention_core=True,
)

# Host time per block forward + backward the GPU waits for in Megatron-DeepSpeed: FITTED on the four
# one-node rows of Lucie-Training's A100 sweep (grid 6 / 8 / 10 / 12 ms; no network in them), held
# out on its multi-node rows, BigScience's layouts and the BLOOM and Lucie-7B whole runs
# (docs/validation.md, "Megatron-DeepSpeed"). Ten times Megatron-LM's 1 ms; BigScience timed
# CUDA_LAUNCH_BLOCKING itself at 0-6 % (chronicles-prequel.md), so it is not the switch's alone.
MEGATRON_DEEPSPEED_HOST_S_PER_BLOCK = 10.0e-3

# Megatron-DeepSpeed with DeepSpeed's bf16 optimizer (BigScience's BLOOM, 2022): Megatron's kernels
# (the profile above) under DeepSpeed's PipelineEngine and BF16_Optimizer, read in DeepSpeed
# 56c5223 (2022-04-19, the bf16 branch tr11's README names) and Megatron-DeepSpeed affff3d2: fp32
# gradient accumulation every micro-batch, blocking one-at-a-time pipeline transfers (none
# hidden), the tied embedding's fp32 gradient reduced whole. The data-parallel all-reduce runs in
# bf16 (engine.py communication_data_type) after the pipeline, unoverlapped, as the profile has.
# bf16 is the precision trainplan plans (DeepSpeed's fp16 optimizer, MT-NLG's, accumulates in the
# fp16 gradients instead). --stack megatron-deepspeed; held out on two whole runs
# (validation/whole_runs.py: BLOOM, Lucie-7B), 21 of BigScience's and 40 of Lucie-Training's timed
# layouts (validation/megatron_deepspeed_runs.py).
MEGATRON_DEEPSPEED_SETTINGS = MEGATRON_LM_SETTINGS.but(
    grad_accum_bytes_per_param=18.0,
    pp_transfers_per_microbatch=4.0,
    pp_comm_overlap=0.0,
    tied_grad_fp32_unsharded=True,
    # BigScience's fork has no --sequence-parallel (megatron/arguments.py, 8387ae17) and tr11 does
    # not partition its checkpointed activations (tr11-176B-ml.slurm: --checkpoint-activations only).
    sequence_parallel=False,
    # ... and its BF16_Optimizer keeps the bf16 gradients beside the fp32 accumulator (settings.py).
    lp_grad_bytes=2.0,
    # Both sources' scripts export CUDA_LAUNCH_BLOCKING=1 (tr11-176B-ml.slurm; Lucie-Training's): a
    # launch returns when its kernel ends, so the host's dispatch adds to the GPU's time.
    host_overlap=0.0,
    host_overhead_per_block_s=MEGATRON_DEEPSPEED_HOST_S_PER_BLOCK,
)

# Fitted on the published Megatron-Core-family rows (docs/validation.md); bench/validate_heldout.py
# re-fits both leaving out each GPU generation. The attention factor is TransformerEngine's
# attention relative to cuDNN's own benchmark of the same kernel (the catalog's cuDNN rates).
MEGATRON_CORE_ATTENTION_KERNEL_FACTOR = 0.6
MEGATRON_CORE_TP_COMM_OVERLAP = 0.5
# Host dispatch per kernel launch in the Megatron profiles: ~60 launches per block, 1 ms.
MEGATRON_DISPATCH_S_PER_LAUNCH = 1.0e-3 / 60
# Router + token-dispatcher launches of one Megatron-Core MoE block per micro-batch (counted in
# docs/model.md, "Host sync of the token dispatcher"): before the host sync (router ~24,
# preprocess ~8, D2H copies ~5, fused permute ~4), after it in forward (3 all-to-alls, fused
# chunk sort and unsort ~4, probs-weighted SwiGLU ~2, fused unpermute ~1), and in backward.
MEGATRON_MOE_LAUNCHES_PRE_SYNC = 41.0
MEGATRON_MOE_LAUNCHES_POST_SYNC = 10.0
MEGATRON_MOE_LAUNCHES_BACKWARD = 26.0

MEGATRON_CORE_SETTINGS = DEFAULT_SETTINGS.but(
    offload_unsharded_grads=False,  # as Megatron-LM's
    # TransformerEngine's fp8 sequence-parallel collectives are not modelled: its tp_comm_overlap
    # was fitted with bf16-byte all-gathers, which this keeps (validate_published unchanged).
    fp8_tp_float8_all_gather=False,
    # Megatron-Core / NeMo / Megatron-Bridge on TransformerEngine: the same fused elementwise
    # kernels and launch cost as above ...
    elementwise_fusion_factor=DEFAULT_SETTINGS.compile_elementwise_factor,
    host_overhead_per_block_s=1.0e-3,
    # ... cuDNN fused attention (TransformerEngine's FusedAttention, its default backend on
    # Hopper and Blackwell) instead of PyTorch SDPA's FlashAttention-2, at the catalog's
    # per-GPU cuDNN rates (docs/hardware.md, "Achievable rates"), times the share of them
    # TransformerEngine's attention reaches in these runs: FITTED on the published NeMo /
    # Megatron-Bridge rows (the long-sequence context-parallel rows pin it, attention being
    # > 90 % of their step); bench/validate_heldout.py re-fits it leaving out the generation ...
    cudnn_attention=True,
    transformer_engine_attention=True,
    cudnn_attention_under_cp=True,
    attention_kernel_factor=MEGATRON_CORE_ATTENTION_KERNEL_FACTOR,
    # ... gathers into and reduces from persistent contiguous buffers (distributed optimizer,
    # Megatron-FSDP): no per-collective copy-in/copy-out kernels ...
    fsdp_gather_copy_bytes_per_param=0.0,
    fsdp_reduce_copy_bytes_per_param=0.0,
    # ... and --tp-comm-overlap (userbuffers) splits the sequence-parallel all-gathers and
    # reduce-scatters into chunks pipelined with the GEMMs that consume them (fitted on the
    # same runs; the default 0.3 assumes no such overlap).
    tp_comm_overlap=MEGATRON_CORE_TP_COMM_OVERLAP,
    # ... and ring attention with each K,V transfer under the previous chunk's attention.
    cp_ring_attention=True,
    cp_comm_overlap=0.7,
    # ... and sequence-parallel linears that keep their input shard only (re-gathered in backward),
    # TransformerEngine's FP8 linears saving that input quantised, the fused SwiGLU of the
    # Megatron-Core MLP (bias_activation_fusion, on in its Llama recipes) saving its input only.
    sp_saves_gathered_inputs=False,
    fp8_saves_float8_linear_inputs=True,
    fused_glu_saves_input_only=True,
    # Vocabulary-parallel cross-entropy over the full local logits, in place (as above) ...
    loss_chunk_tokens=0,
    loss_bytes_per_logit=MEGATRON_VOCAB_PARALLEL_CE_BYTES_PER_LOGIT,
    # ... and gradients in Megatron-Core's persistent contiguous buffer (megatron/core/
    # distributed/param_and_grad_buffer.py, allocated once when the model is wrapped; Megatron-FSDP
    # keeps its sharded buffers the same way): no per-step gradient churn left reserved above
    # the allocated peak (the 1.1 default is FSDP2's).
    reserve_static_fraction=0.0,
    # MoE (only MoE blocks read these): TEGroupedMLP with the probabilities fused into the
    # SwiGLU (megatron/core/transformer/moe/experts.py), so fc1 input, fc1 output and fc2 input
    # are saved per routed copy (FP8 linear inputs under FP8) ...
    moe_grouped_mlp=True,
    # ... and TransformerEngine's GroupedLinear on Hopper runs one cuBLAS GEMM per local expert
    # (general_grouped_gemm loops over them): 6 launches per expert and block (fc1, fc2: forward,
    # dgrad, wgrad) and, under FP8, 4 casts (the inputs forward, the output gradients backward),
    # at the profile's dispatch cost per launch (1 ms per block / ~60 launches). ESTIMATE.
    moe_gemm_launches_per_local_expert=6.0,
    moe_fp8_cast_launches_per_local_expert=4.0,
    moe_forward_gemm_launches_per_local_expert=2.0,
    moe_forward_fp8_cast_launches_per_local_expert=2.0,
    moe_launch_s=MEGATRON_DISPATCH_S_PER_LAUNCH,
    # Router + MoEAlltoAllTokenDispatcher launches per MoE block, counted in Megatron-LM
    # (NVIDIA/Megatron-LM d98e8a6, megatron/core/transformer/moe/{router.py, moe_utils.py,
    # token_dispatcher.py}) for the Megatron-Bridge MoE recipes (alltoall dispatcher, dropless,
    # moe_permute_fusion on, moe_router_fusion off, aux_loss, no CUDA graphs): docs/model.md,
    # "Host sync of the token dispatcher", lists them. ESTIMATE to ~+-30 % (op-level count).
    moe_dispatch_launches_pre_sync=MEGATRON_MOE_LAUNCHES_PRE_SYNC,
    moe_dispatch_launches_post_sync=MEGATRON_MOE_LAUNCHES_POST_SYNC,
    moe_dispatch_launches_backward=MEGATRON_MOE_LAUNCHES_BACKWARD,
    # Dropless alltoall: ``MoEAlltoAllTokenDispatcher.preprocess`` sets cuda_sync_point to
    # "before_ep_alltoall" (ep > 1; "before_finish" without ep), and ``token_dispatch`` waits on
    # the D2H event of the split sizes (``_maybe_dtoh_and_synchronize``: d2h_event.synchronize()).
    moe_host_sync=True,
)


def moe_a2a_overlapped(settings: ModelingSettings) -> ModelingSettings:
    """``settings`` under Megatron-Core's --overlap-moe-expert-parallel-comm (Megatron-Bridge's
    ``moe_a2a_overlap``, with --delay-wgrad-compute): its combined 1F1B schedule runs one
    micro-batch's forward beside another's backward, layer by layer, and "EP A2A in forward step
    is hidden by the attention/mlp computation in the backward step, and vice versa"
    (megatron/core/pipeline_parallel/combined_1f1b.py at d98e8a6), so the all-to-alls are exposed
    only beyond the compute beside them, and not at all in the warm-up and cool-down micro-batches
    that have no partner (``moe.a2a_unpaired_share``). One rule for ``--moe-a2a-overlap`` and the
    validation rows whose recipes set it (validation/moe_recipes.py ``a2a_overlapped``); the
    schedule's host cost (Megatron-Bridge PR #1760) is not counted."""
    return settings.but(ep_comm_overlap=1.0, ep_overlap_needs_pairs=True)


def a2a_overlap_refused(ep, pp, vpp, ac) -> np.ndarray:
    """Where Megatron-Core refuses --overlap-moe-expert-parallel-comm (arrays or scalars; ``ac``
    as candidate codes): TransformerConfig asserts expert parallelism (ep > 1), the interleaved
    schedule under a pipeline (vpp set where pp > 1), and no full recompute nor a recompute layer
    count (review s31: the planner timed such layouts overlapped)."""
    ep, pp, vpp, ac = (np.asarray(v) for v in (ep, pp, vpp, ac))
    return (ep <= 1) | ((pp > 1) & (vpp <= 1)) | (ac == AC_FULL) | (ac == AC_BLOCKS)


# DeepSeek-V3's in-house HAI-LLM stack as its report describes it (arXiv:2412.19437), on top of
# the Megatron-Core kernels profile (not a --stack choice: no published code to emit for).
DEEPSEEK_V3_SETTINGS = MEGATRON_CORE_SETTINGS.but(
    # Its fine-grained FP8 GEMMs promote the tensor cores' partial sums to FP32 on CUDA cores every
    # 128 elements in every pass, forward included (sec. 3.3.2, "Increasing Accumulation
    # Precision"): no fast accumulation.
    fp8_fast_accum_forward_speedup=1.0,
    # DualPipe pairs a forward and a backward chunk so that "both all-to-all and PP communication
    # can be fully hidden during execution" (sec. 3.2.1): hidden up to the compute beside them.
    ep_comm_overlap=1.0,
    pp_comm_overlap=1.0,
    # Each token's experts lie on at most 4 nodes; it crosses InfiniBand once per node and is
    # forwarded over NVLink (sec. 2.1.2, 3.2.2).
    moe_max_nodes_per_token=4,
    # The SwiGLU inputs are cached in FP8 and its output recomputed in backward (sec. 3.3.4,
    # Megatron-Core's "moe_act"), and "all RMSNorm operations and MLA up-projections" recomputed
    # in backward (sec. 3.2.3), as its "layernorm" and "mla_up_proj" modules (the latent norms are
    # part of it).
    recompute_modules=frozenset({Recompute.LAYERNORM, Recompute.MLA_UP_PROJ, Recompute.MOE_ACT}),
    moe_fp8_activation_cache=True,
    # AdamW moments in BF16 (sec. 3.3.4, "Low-Precision Optimizer States"); master weights and
    # the gradients accumulated over the batch stay FP32 (same section). The accumulation buffer
    # lives for the whole step, allocated once (as Megatron-Core's contiguous buffer): no
    # per-step gradient churn left reserved above the peak (the 1.1 default is FSDP2's).
    adam_state_bytes=4.0,
    reserve_static_fraction=0.0,
    # Its own kernels: no per-expert launch cost is published; the grouped GEMM is assumed fused.
    moe_gemm_launches_per_local_expert=0.0,
    moe_fp8_cast_launches_per_local_expert=0.0,
    moe_forward_gemm_launches_per_local_expert=0.0,
    moe_forward_fp8_cast_launches_per_local_expert=0.0,
    # Nor a router/dispatcher launch count or a host sync (DualPipe's own dispatch kernels).
    moe_dispatch_launches_pre_sync=0.0,
    moe_dispatch_launches_post_sync=0.0,
    moe_dispatch_launches_backward=0.0,
    moe_host_sync=False,
)

# torchtitan (pytorch/torchtitan): PyTorch FSDP2/TP/PP/CP on its own Llama modules, the same SDPA
# flash kernels, FSDP2 copy-in/copy-out and fused AdamW as trainplan's trainer, so only the loss
# differs: torchtitan/components/loss.py ``cross_entropy_loss`` runs F.cross_entropy over the full
# fp32 logits (compiled with the model under --compile); trainplan's trainer chunks it. torch.compile
# and float8 are per-run choices there as here (TrainingConfig.compile / precision), not the stack.
TORCHTITAN_SETTINGS = DEFAULT_SETTINGS.but(loss_chunk_tokens=0)

# Hugging Face Trainer / accelerate: transformers' modules (impl hf) under accelerate's FSDP (or
# DeepSpeed), called with labels, so the loss upcasts the full logits to fp32 at once
# (transformers' ForCausalLMLoss: ``logits.float()``, then cross_entropy); no torch.compile unless
# asked; SDPA attention (transformers' default attn_implementation). trainplan's FSDP2 kernels
# otherwise: these are what the H200 calibration runs measured (stock HF Llama under FSDP2,
# ``model(labels=...)``: validation/calibration.py).
HF_TRAINER_SETTINGS = DEFAULT_SETTINGS.but(loss_chunk_tokens=0)

# DeepSpeed ZeRO on Hugging Face modules (the transformers / accelerate integration, the stack of
# ml-engineering's H200-vs-B200 recipe): the same modules and full-logits loss as HF Trainer, the
# ZeRO stage as the layout's sharding. Its collectives are counted as DeepSpeed 0.19 issues them
# under transformers' documented configs (zero_collectives.py: bucketed all-reduces and the
# blocking post-step gather for ZeRO-1/2, per-module gathers and persistent tensors for ZeRO-3);
# the 2021 code's ZeRO-3 at hundreds of GPUs (Narayanan et al. 2021 Table 2) ran slower still
# (docs/validation.md, "Known misses").
# Megatron-DeepSpeed's 3D runs (BLOOM) are --stack megatron-deepspeed.
# CPU offload runs DeepSpeed's fused CPU-Adam (DeepSpeedCPUAdam): its bytes per parameter and the
# share of the host's DRAM bandwidth it reached on the DGX-2 (ZeRO-Offload Table 4); DeepSpeed's
# gradient-norm pass over the host gradients is not counted.
DEEPSPEED_SETTINGS = HF_TRAINER_SETTINGS.but(
    offload_unsharded_grads=False,  # ZeRO-1 reduces whole gradients on the GPU (ModelingSettings)
    deepspeed_zero=HF_DOCUMENTED_ZERO,
    host_adam_bytes_per_param=DEEPSPEED_CPU_ADAM_BYTES_PER_PARAM,
    host_adam_bandwidth_fraction=DEEPSPEED_CPU_ADAM_HOST_BANDWIDTH_FRACTION,
)

# MosaicML llm-foundry: Composer FSDP on its MPT modules, flash-attn's fused cross-entropy over
# the full logits, and the flash-attn package's FlashAttention-2 (attn_impl "flash"; "triton" runs
# MPT's Triton kernel: --attention triton), never cuDNN. Validated on its benchmark tables
# (validation/fsdp_runs.py: 209 rows).
LLM_FOUNDRY_SETTINGS = with_attention(TORCHTITAN_SETTINGS, AttentionKernel.FLASH2)


class StackRefusals(NamedTuple):
    """What a stack cannot run, per row (``Stack.refusals``)."""

    no_pipeline: np.ndarray  # pp > 1 where it has no pipeline engine
    hf_pipeline: np.ndarray  # pp > 1 on DeepSpeed's engine with Hugging Face's modules (no PipelineModule)
    autotp_zero3: np.ndarray  # tp > 1 with ZeRO-3 under DeepSpeed's AutoTP training
    pipeline_zero: np.ndarray  # ZeRO stage 2 or 3 with pp > 1 under DeepSpeed's pipeline engine
    interleaved: np.ndarray  # vpp > 1 under DeepSpeed's pipeline engine
    uneven_stages: np.ndarray  # layers not split evenly over pp x vpp stages where the stack needs it
    interleaving: np.ndarray  # vpp > 1 with pp <= 2 or micro-batches not divisible by pp (Megatron-LM)
    no_context_parallel: np.ndarray
    no_expert_parallel: np.ndarray
    sharding: np.ndarray  # more sharding than the stack has
    unsharded_offload: np.ndarray  # host offload without ZeRO where the stack's offload needs it

    def any(self) -> np.ndarray:
        return np.logical_or.reduce(tuple(self))


class Stack(StrEnum):
    """The training software a prediction describes (``--stack``). Only ``trainplan`` plans can be
    emitted and run; the others are estimates of what that stack would do on the same layout."""

    TRAINPLAN = "trainplan"
    TORCHTITAN = "torchtitan"
    HF_TRAINER = "hf-trainer"
    DEEPSPEED = "deepspeed"
    LLM_FOUNDRY = "llm-foundry"
    MEGATRON_LM = "megatron-lm"
    MEGATRON_DEEPSPEED = "megatron-deepspeed"
    MEGATRON_CORE = "megatron-core"
    DEEPSEEK_V3 = "deepseek-v3"

    @property
    def trainer_rules(self) -> bool:
        """Whether the rules that are limits of trainplan's trainer bind (planner/rule_codes.py):
        only trainplan's plans run on it; another stack's estimate sees the laws of the layout."""
        return self is Stack.TRAINPLAN

    @property
    def deepspeed_pipeline(self) -> bool:
        """Whether its pipeline is DeepSpeed's PipelineEngine, which runs ZeRO stage 0/1 only
        (deepspeed/runtime/pipe/engine.py asserts "ZeRO-2 and ZeRO-3 are incompatible with
        pipeline parallelism") and one schedule, without interleaved stages (pipe/schedule.py
        TrainSchedule): Megatron-DeepSpeed's (``deepspeed`` trains Hugging Face's modules, which
        that engine cannot run: ``hf_pipeline``)."""
        return self is Stack.MEGATRON_DEEPSPEED

    @property
    def even_stages(self) -> bool:
        """Whether the stack splits the layers evenly over its pipeline stages, with the interleaved
        schedule's limits: Megatron-LM of 2021-22 (arguments.py at dcef906 asserts "pipeline-model-
        parallel size should be greater than 2 with interleaved schedule" and "number of layers is
        not divisible by number of layers per virtual pipeline stage", its transformer "num_layers
        must be divisible by pipeline_model_parallel_size", its interleaved schedule micro-batches
        divisible by pp). Megatron-Core places uneven first and last stages
        (``pipeline_model_parallel_layout``; NeMo's 405B recipes run 126 layers on pp 8 x vpp 8),
        DeepSpeed's PipelineModule balances layers, torchtitan and trainplan build uneven stages."""
        return self is Stack.MEGATRON_LM

    @property
    def pipelines(self) -> bool:
        """Whether the stack has a pipeline engine at all. HF Trainer (accelerate: its
        ParallelismConfig has dp, tp and cp axes, no pp) and llm-foundry (Composer: FSDP / HSDP
        and an experimental tp, mosaicml/llm-foundry#1743, #1521) have none."""
        return self not in (Stack.HF_TRAINER, Stack.LLM_FOUNDRY)

    @property
    def hf_modules_on_deepspeed(self) -> bool:
        """DeepSpeed on Hugging Face's modules (``deepspeed``): its PipelineEngine trains only a
        ``PipelineModule``, a list of layers that Megatron-DeepSpeed (GPTModelPipe) and GPT-NeoX
        build and transformers' models are not (deepspeed/runtime/pipe/engine.py asserts
        ``isinstance(model, PipelineModule)``), so pp > 1 is Megatron-DeepSpeed's
        (``--stack megatron-deepspeed``; trial s26: BLOOM's 3D layout was timed on Hugging Face's
        modules, faster than the stack that trained it); and its tensor parallelism on them is
        AutoTP training, which combines with ZeRO stages 0-2, not 3 (deepspeed.ai
        tutorials/autotp-training, DeepSpeed >= 0.16.4)."""
        return self is Stack.DEEPSPEED

    @property
    def context_parallel(self) -> bool:
        """Whether the stack splits a sequence over ranks as the model times it (ring or all-gather
        attention): llm-foundry does not (mosaicml/llm-foundry#1743: 'only Zero3/DP (i.e. FSDP, or
        HSDP) are supported'), Megatron-LM of 2021-22 predates it, and DeepSpeed's long-sequence
        method is Ulysses (an all-to-all over heads, not modelled)."""
        return self not in (Stack.LLM_FOUNDRY, Stack.MEGATRON_LM, Stack.DEEPSPEED)

    @property
    def expert_parallel(self) -> bool:
        """Whether the stack places experts on ranks: not on Hugging Face's modules (HF Trainer,
        DeepSpeed), whose MoE blocks loop over every expert on every rank (DeepSpeed-MoE's expert
        parallelism needs its own deepspeed.moe layer, and its engine asserts 'MoE not supported
        with Stage 3')."""
        return self.modules != Implementation.HF

    @property
    def max_sharding(self) -> int:
        """The most a stack shards (planner/model/candidates.py codes): Megatron-LM of 2021-22 had
        its distributed optimizer (ZeRO-1) and neither ZeRO-2 nor FSDP."""
        return SHARD_ZERO1 if self is Stack.MEGATRON_LM else SHARD_FSDP

    @property
    def megatron_recompute_flags(self) -> bool:
        """Whether the stack's users name recomputation with Megatron's flags
        (``--recompute-granularity selective|full``), whose 'selective' is not trainplan's."""
        return self in (Stack.MEGATRON_LM, Stack.MEGATRON_DEEPSPEED, Stack.MEGATRON_CORE, Stack.DEEPSEEK_V3)

    @property
    def distributed_optimizer(self) -> bool:
        """Whether the stack's own recipes shard the optimizer states only (ZeRO-1): Megatron's
        distributed optimizer, the default of every NeMo / Megatron-Bridge recipe and of the
        published rows (``use_distributed_optimizer``; Megatron-FSDP is opt-in), BigScience's
        ZeRO-1 and DeepSeek-V3's ZeRO-1 (trial s26: an estimate under megatron-core defaulted to
        FSDP, 2x slower than the zero1 its validated rows ran, and was still called validated)."""
        return self in (Stack.MEGATRON_LM, Stack.MEGATRON_DEEPSPEED, Stack.MEGATRON_CORE, Stack.DEEPSEEK_V3)

    def default_sharding(self, tp: int = 1) -> Sharding:
        """An estimate's sharding when none is named: the stack's recipes' own (ZeRO-1 for the
        Megatron family and DeepSeek's, whose pipeline engine also runs ZeRO-1 at most), else FSDP,
        or ZeRO-2 under DeepSpeed's AutoTP (tp > 1), which runs no ZeRO-3."""
        if self.distributed_optimizer:  # Megatron-LM's ZeRO-1 ceiling (max_sharding) among them
            return Sharding.ZERO1
        return Sharding.ZERO2 if self.hf_modules_on_deepspeed and tp > 1 else Sharding.FSDP

    def refusals(self, tp, pp, sharding, vpp, cp, ep, num_layers: int, grad_accum, offload=False) -> StackRefusals:
        """What the stack refuses, per row (arrays or scalars; ``sharding`` as candidate codes;
        ``grad_accum``: the pipeline's micro-batches; ``offload``: states on the host). One rule for
        the search's filter and for an estimate's refusal (planner/request.py ``stack_problem``)."""
        piped, deepspeed = np.asarray(pp) > 1, self.deepspeed_pipeline & (np.asarray(pp) > 1)
        on_hf = self.hf_modules_on_deepspeed
        pp, vpp, chunked = np.asarray(pp), np.asarray(vpp), np.asarray(vpp) > 1
        even = self.even_stages
        return StackRefusals(
            no_pipeline=piped & (not self.pipelines),
            hf_pipeline=piped & on_hf,
            autotp_zero3=on_hf & (np.asarray(tp) > 1) & (np.asarray(sharding) == SHARD_FSDP),
            pipeline_zero=deepspeed & (np.asarray(sharding) > SHARD_ZERO1),
            interleaved=deepspeed & (np.asarray(vpp) > 1),
            uneven_stages=even & ((num_layers % pp != 0) | ((num_layers // pp) % vpp != 0)),
            interleaving=even & chunked & ((pp <= 2) | (np.asarray(grad_accum) % pp != 0)),
            no_context_parallel=(np.asarray(cp) > 1) & (not self.context_parallel),
            no_expert_parallel=(np.asarray(ep) > 1) & (not self.expert_parallel),
            sharding=np.asarray(sharding) > self.max_sharding,
            unsharded_offload=np.asarray(offload, dtype=bool)
            & (np.asarray(sharding) < SHARD_ZERO1)
            & self.offloads_sharded_states_only,
        )

    def layout_refusals(self, layout: Layout, num_layers: int, grad_accum: int, offload: bool) -> StackRefusals:
        """``refusals`` of one layout (an estimate's; its fix hints' layouts)."""
        sharding = code(layout.sharding)
        return self.refusals(
            layout.tp, layout.pp, sharding, layout.vpp, layout.cp, layout.ep, num_layers, grad_accum, offload
        )

    @property
    def overlaps_moe_a2a(self) -> bool:
        """Whether --moe-a2a-overlap is one of its choices: Megatron-Core's combined 1F1B schedule
        (deepseek-v3's profile hides its all-to-alls already, by DualPipe)."""
        return self is Stack.MEGATRON_CORE

    @property
    def serialises_host(self) -> bool:
        """Whether its profile times the host's dispatch in series with the GPU (``host_overlap`` < 1:
        megatron-deepspeed, run with CUDA_LAUNCH_BLOCKING=1 by both its measured sources)."""
        return STACK_SETTINGS[self].host_overlap < 1.0

    @property
    def attention_via_sdpa(self) -> bool:
        """Whether the stack's attention is PyTorch's SDPA, whose dispatch picks the kernel: cuDNN
        first on Hopper and Blackwell from torch 2.11, whose wheels bundle a cuDNN newer than 9.15
        (huggingface/transformers#48163), FlashAttention-2 before (trial s31: a 16 % difference at
        16K under hf-trainer, unsaid)."""
        return self in (Stack.TRAINPLAN, Stack.TORCHTITAN, Stack.HF_TRAINER, Stack.DEEPSPEED)

    @property
    def offloads_sharded_states_only(self) -> bool:
        """Whether the stack's host offload needs sharded optimizer states (trial s31: a deepspeed
        plan offloaded at ZeRO stage 0). DeepSpeed's ZeRO-Offload is a ZeRO stage's (config docs,
        offload_optimizer: "valid for ZeRO stage 1, 2, 3"); Megatron-Core's --optimizer-cpu-offload
        needs the precision-aware optimizer, which "only supported with distributed optimizer"
        (megatron/core/optimizer/__init__.py at d98e8a6). FSDP2's CPUOffloadPolicy (trainplan,
        torchtitan) also runs on a replicated group."""
        return self in (
            Stack.DEEPSPEED,
            Stack.MEGATRON_DEEPSPEED,
            Stack.MEGATRON_LM,
            Stack.MEGATRON_CORE,
            Stack.DEEPSEEK_V3,
        )

    @property
    def fsdp_word(self) -> str:
        """What the stack calls full sharding in a layout's words: ZeRO-3 under DeepSpeed's engines
        (trial s26: a deepspeed estimate printed "fsdp"); the input stays ``--sharding fsdp``."""
        return "zero3" if self in (Stack.DEEPSPEED, Stack.MEGATRON_DEEPSPEED) else "fsdp"

    @property
    def compiles(self) -> bool:
        """Whether ``--compile`` (torch.compile over the model) is one of the stack's choices:
        PyTorch's stacks have it (torchtitan --compile, HF Trainer's torch_compile, DeepSpeed's
        engine.compile, Composer's compile_config); the Megatron family and DeepSeek's run their
        own fused kernels instead (trial s26: `--stack megatron-core --compile` printed "compile"
        and changed nothing)."""
        return self in TORCH_COMPILE_STACKS

    @property
    def modules(self) -> Implementation | None:
        """The modules the stack trains: Hugging Face's (HF Trainer, DeepSpeed) or its own fused
        ones (torchtitan, llm-foundry, Megatron's, DeepSeek's), timed with the native decoder's
        tables whatever the family (its validation rows are predicted so: validation/fsdp_runs.py,
        whole_runs.py); None for trainplan, whose trainer builds natively what it can and takes
        Hugging Face's modules otherwise (``default_implementation``)."""
        if self is Stack.TRAINPLAN:
            return None
        return Implementation.HF if self in (Stack.HF_TRAINER, Stack.DEEPSPEED) else Implementation.NATIVE


# The stacks whose runs may torch.compile the model (``Stack.compiles``).
TORCH_COMPILE_STACKS = frozenset(
    {Stack.TRAINPLAN, Stack.TORCHTITAN, Stack.HF_TRAINER, Stack.DEEPSPEED, Stack.LLM_FOUNDRY}
)

STACK_SETTINGS: dict[Stack, ModelingSettings] = {
    Stack.TRAINPLAN: DEFAULT_SETTINGS,
    Stack.TORCHTITAN: TORCHTITAN_SETTINGS,
    Stack.HF_TRAINER: HF_TRAINER_SETTINGS,
    Stack.DEEPSPEED: DEEPSPEED_SETTINGS,
    Stack.LLM_FOUNDRY: LLM_FOUNDRY_SETTINGS,
    Stack.MEGATRON_LM: MEGATRON_LM_SETTINGS,
    Stack.MEGATRON_DEEPSPEED: MEGATRON_DEEPSPEED_SETTINGS,
    Stack.MEGATRON_CORE: MEGATRON_CORE_SETTINGS,
    Stack.DEEPSEEK_V3: DEEPSEEK_V3_SETTINGS,
}

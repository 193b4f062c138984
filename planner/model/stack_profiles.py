"""The software-stack profiles (``--stack``): what each stack changes in the analytic model.

The defaults (planner/model/settings.py ``DEFAULT_SETTINGS``) describe trainplan's own trainer;
each profile here changes only what its stack changes, each for the reason given beside it.
planner/model/stacks.py names the stacks (``Stack``), what each refuses and its profile
(``STACK_SETTINGS``).
"""

from __future__ import annotations

import numpy as np

from planner.layout import Sharding
from planner.model.attention_choice import with_attention
from planner.model.attention_kernels import AttentionKernel
from planner.model.block_rows import Recompute
from planner.model.candidates import AC_BLOCKS, AC_FULL
from planner.model.cp_ring import TORCH_RING_LOOP
from planner.model.settings import (
    DEFAULT_SETTINGS,
    FUSED_CE_BYTES_PER_LOGIT,
    TORCH_DDP_BUCKET_BYTES,
    ModelingSettings,
)
from planner.model.settings_job import (
    ACCELERATE_NO_SYNC,
    DEEPSPEED_CPU_ADAM_BYTES_PER_PARAM,
    DEEPSPEED_CPU_ADAM_HOST_BANDWIDTH_FRACTION,
    DEEPSPEED_ZERO2_ACCUM_OFFLOAD,
    DEEPSPEED_ZERO3_ACCUM_OFFLOAD,
    FSDP1_ACCUM_OFFLOAD,
    NO_ACCUM_OFFLOAD,
    REDUCE_EVERY_MICROBATCH,
    TORCHTITAN_ACCUM_SYNC,
)
from planner.model.zero_config import HF_DOCUMENTED_ZERO
from planner.units import FP32_BYTES

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

# Where fp32 (or pure bf16) weights are computed with as stored, no copy beside them
# (FormatSettings.computes_on_weights_under). Below ZeRO-3, Megatron's distributed optimizer steps views of
# its fp32 weights (trial s40). Without sharding only: torch's DDP, and DeepSpeed's engine at stage 0 (a
# plain optimizer on the module's parameters); its ZeRO-1/2 steps a clone of the rank's partition beside the
# whole module weights (stage_1_and_2.py ``weights_partition = ...detach().clone()`` at 02aa38c), as mixed
# precision's fp32 partition beside the bf16 module: bf16rest56.
MEGATRON_FP32_VIEWS = (Sharding.NONE, Sharding.ZERO1, Sharding.ZERO2)
UNSHARDED_ON_WEIGHTS = (Sharding.NONE,)

MEGATRON_LM_SETTINGS = DEFAULT_SETTINGS.but(
    computes_on_weights_under=MEGATRON_FP32_VIEWS,
    ddp_reduces_in_backward=False,  # as Megatron-Core's (settings.py ddp_reduces_in_backward)
    sliding_window_band=False,  # windows are the kernel's (ModelingSettings.sliding_window_band)
    # its optimizer offload keeps the gradient buffer on the GPU (ModelingSettings), so gradient
    # accumulation moves nothing to the host (settings_job.py ``NO_ACCUM_OFFLOAD``)
    offload_unsharded_grads=False,
    offload_accum_fsdp=NO_ACCUM_OFFLOAD,
    offload_accum_zero2=NO_ACCUM_OFFLOAD,
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
    loss_parallel_bytes_per_logit=None,
    # ... gradients in one contiguous buffer allocated at model wrap (no per-step churn), there
    # from the first forward on ...
    reserve_static_fraction=0.0,
    persistent_grad_buffer=True,
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
    # its ZeRO-1 is DeepSpeed's optimizer, a clone of the partition beside the module (not Megatron's views)
    computes_on_weights_under=UNSHARDED_ON_WEIGHTS,
    # DeepSpeed's engine offloads (its ZeRO stages' rules: settings_job.py)
    offload_accum_fsdp=DEEPSPEED_ZERO3_ACCUM_OFFLOAD,
    offload_accum_zero2=DEEPSPEED_ZERO2_ACCUM_OFFLOAD,
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
    computes_on_weights_under=MEGATRON_FP32_VIEWS,
    ddp_reduces_in_backward=False,  # its rows hide more than the last backward (session 39's trial)
    sliding_window_band=False,  # TransformerEngine's window_size (ModelingSettings.sliding_window_band)
    offload_unsharded_grads=False,  # as Megatron-LM's
    offload_accum_fsdp=NO_ACCUM_OFFLOAD,
    offload_accum_zero2=NO_ACCUM_OFFLOAD,
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
    # same runs; without it, UNBUFFERED_TP_COMM_OVERLAP).
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
    loss_parallel_bytes_per_logit=None,
    # ... and gradients in Megatron-Core's persistent contiguous buffer (megatron/core/
    # distributed/param_and_grad_buffer.py, allocated once when the model is wrapped; Megatron-FSDP
    # keeps its sharded buffers the same way): no per-step gradient churn left reserved above
    # the allocated peak (the 1.1 default is FSDP2's), there from the first forward on.
    reserve_static_fraction=0.0,
    persistent_grad_buffer=True,
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


# Megatron-Core without --tp-comm-overlap: the share of its TP traffic hidden (tp_overlap_unbuffered);
# trainplan's default share until session 52 (which is now DTensor's 0: settings.py).
UNBUFFERED_TP_COMM_OVERLAP = 0.3


def tp_overlap_unbuffered(settings: ModelingSettings) -> ModelingSettings:
    """``settings`` without Megatron-Core's --tp-comm-overlap (``--no-tp-comm-overlap``): no
    userbuffers pipelining of the sequence-parallel all-gathers and reduce-scatters into the GEMMs.
    What Megatron still hides then is timed at ``UNBUFFERED_TP_COMM_OVERLAP`` (the share trainplan's
    default was until session 52, which assumed no such overlap; nothing fitted here): without userbuffers its
    linears still issue the backward's input all-gather and gradient reduce-scatter asynchronously,
    under the dgrad and wgrad GEMMs (Megatron-LM core_v0.6.0 megatron/core/tensor_parallel/layers.py,
    ``async_op=True``; TransformerEngine v1.3 module/linear.py, "Overlap input AG with dgrad",
    "Overlap dgrad-RS/AR with wgrad"), while the forward's wait on the critical path. That mechanism
    is why some share is hidden; the 0.3 itself is that old default's, not derived from it."""
    return settings.but(tp_comm_overlap=UNBUFFERED_TP_COMM_OVERLAP)


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
# torchtitan: the full logits' loss (compiled with the model under training.compile), windows in
# FlexAttention, and its per-op selective checkpointing (planner/model/op_checkpoint.py).
# Its tensor parallelism is DTensor's plan, as trainplan's: the default's ``DTENSOR_TP_COMM_OVERLAP``
# (settings.py, read in torchtitan's ``apply_tp`` at 9dec370). Async TP
# (experimental.enable_async_tensor_parallel, off by default, compile only: inductor's
# _micro_pipeline_tp) pipelines the collectives into the GEMMs; not modelled.
# Its context parallelism is torch's (torch.distributed.tensor.experimental.context_parallel):
# one SDPA per ring step on load-balanced halves, merged step by step in fp32 (``TORCH_RING_LOOP``,
# cp_ring.py). Its K/V exchange is still timed as trainplan's all-gather (cp_ring_attention False).
TORCHTITAN_SETTINGS = DEFAULT_SETTINGS.but(
    loss_chunk_tokens=0,
    sliding_window_band=False,
    compile_fuses_loss=True,
    selective_per_op=True,
    cp_ring_loop=TORCH_RING_LOOP,
    # Its pure bf16 (``training.dtype = "bfloat16"``) still reduces in fp32: ``mixed_precision_reduce``
    # admits only "float32" (torchtitan/config/configs.py l.102 at b5bcd76), passed to every FSDP2 unit
    # (models/llama3/parallelize.py l.57-72, DDP too: a shard degree of 1), and FSDP2 keeps a reduce
    # dtype unlike the parameters' (torch 2.13 _fsdp_param.py ``init_dtype_attrs``).
    pure_bf16_reduce_bytes=FP32_BYTES,
    accum_sync=TORCHTITAN_ACCUM_SYNC,  # its DDP reduces every micro-batch (settings_job.py)
)

# Hugging Face Trainer / accelerate: transformers' modules (impl hf) under accelerate's FSDP (or
# DeepSpeed), called with labels, so the loss upcasts the full logits to fp32 at once
# (transformers' ForCausalLMLoss: ``logits.float()``, then cross_entropy); no torch.compile unless
# asked; SDPA attention (transformers' default attn_implementation). trainplan's FSDP2 kernels
# otherwise: these are what the H200 calibration runs measured (stock HF Llama under FSDP2,
# ``model(labels=...)``: validation/calibration.py).
HF_TRAINER_SETTINGS = DEFAULT_SETTINGS.but(
    loss_chunk_tokens=0,
    sliding_window_band=False,  # HF modules only
    loss_parallel_bytes_per_logit=None,  # no tensor-parallel LM head (review s41)
    # Its inner micro-batches run under accelerate's no_sync: whole gradients held, reduced once a
    # step, FSDP2's zero2 re-gathering every micro-batch (settings_job.py ``ACCELERATE_NO_SYNC``).
    accum_sync=ACCELERATE_NO_SYNC,
    # Without FSDP, torch's DistributedDataParallel: an fp32 or pure-bf16 model computes with its own weights
    # (DeepSpeed's, below, inherits it: UNSHARDED_ON_WEIGHTS), and reduces in its buckets
    computes_on_weights_under=UNSHARDED_ON_WEIGHTS,
    ddp_bucket_bytes=TORCH_DDP_BUCKET_BYTES,
)

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
    ddp_reduces_in_backward=False,  # its engine's own reduction, not read: the whole-step window, as before
    # ... in its own buckets (engine.allreduce_gradients: 5e8 elements), not torch DDP's: read as a block's gradient
    ddp_bucket_bytes=None,
    offload_unsharded_grads=False,  # ZeRO-1 reduces whole gradients on the GPU (ModelingSettings)
    # Trainer takes no no_sync under DeepSpeed (transformers 5.25.0 trainer.py l. 1941-1947), whose
    # ZeRO-2/3 hooks reduce every micro-batch (stage_1_and_2.py, stage3.py).
    accum_sync=REDUCE_EVERY_MICROBATCH,
    # ZeRO >= 1 keeps gradients in the model's dtype: transformers' configs leave
    # data_types.grad_accum_dtype unset (trial s36: ZeRO-1 was charged 4 bytes a gradient).
    zero_grads_in_model_dtype=True,
    lp_param_shard_bytes=2.0,  # ZeRO-3's bf16 partition beside the fp32 one (settings.py)
    deepspeed_zero=HF_DOCUMENTED_ZERO,
    host_adam_bytes_per_param=DEEPSPEED_CPU_ADAM_BYTES_PER_PARAM,
    host_adam_bandwidth_fraction=DEEPSPEED_CPU_ADAM_HOST_BANDWIDTH_FRACTION,
    # ZeRO-3 and ZeRO-2 offload under gradient accumulation (stage3.py, stage_1_and_2.py: settings_job.py)
    offload_accum_fsdp=DEEPSPEED_ZERO3_ACCUM_OFFLOAD,
    offload_accum_zero2=DEEPSPEED_ZERO2_ACCUM_OFFLOAD,
)

# flash-attn's Triton cross-entropy (flash_attn/ops/triton/cross_entropy.py at 0251105a,
# ``CrossEntropyLossFunction``): the forward saves the logits in their own dtype (bf16 under
# autocast) and an fp32 log-sum-exp per row, with no fp32 copy; the backward writes the gradient
# into ``torch.empty_like(logits)`` (bf16; into the logits themselves with inplace_backward,
# which llm-foundry does not set): 2 + 2 bytes per logit at the loss backward's peak
# (``FUSED_CE_BYTES_PER_LOGIT``). The 2023 benchmark rows ran flash-attn 1.x's CUDA xentropy kernel,
# which the Triton one replaced and this reading did not open.

# MosaicML llm-foundry: Composer FSDP on its MPT modules, flash-attn's fused cross-entropy over
# the full logits (``loss_fn: fused_crossentropy``, the default of ComposerMPTCausalLM since the
# MPT release, llmfoundry/models/mpt/modeling_mpt.py at 8c8dd48; scripts/train/README.md "we turn
# on by default a kernel fusion optimization for the Cross Entropy loss"), and the flash-attn
# package's FlashAttention-2 (attn_impl "flash"; "triton" runs MPT's Triton kernel: --attention
# triton), never cuDNN. Validated on its benchmark tables (validation/fsdp_runs.py: 209 rows).
LLM_FOUNDRY_SETTINGS = with_attention(
    # Composer checkpoints whole blocks (its FSDP activation_checkpointing); no torch.compile; its
    # one TP strategy (llmfoundry/tp/ffn_tp_strategy.py) splits the MLP only, never the LM head, so
    # the fused loss holds its bytes at any tp (review s41: charged loss_parallel's 16).
    TORCHTITAN_SETTINGS.but(
        # Composer's own accumulation (its DDP sync strategy, not read here): DDP reduced once, as before review56
        accum_sync=REDUCE_EVERY_MICROBATCH,
        loss_bytes_per_logit=FUSED_CE_BYTES_PER_LOGIT,
        compile_fuses_loss=False,
        selective_per_op=False,
        loss_parallel_bytes_per_logit=None,
        # Composer's FSDP is torch's FSDP1 (FULL_SHARD / SHARD_GRAD_OP): its offload copies each
        # micro-batch's accumulated shard to the host on a side stream (settings_job.py)
        offload_accum_fsdp=FSDP1_ACCUM_OFFLOAD,
        offload_accum_zero2=FSDP1_ACCUM_OFFLOAD,
        # Without sharding, torch's DDP or FSDP1's NO_SHARD (views of its flat parameter) compute with the
        # stored weights; SHARD_GRAD_OP gathers into a buffer apart (FormatSettings.computes_on_weights_under)
        computes_on_weights_under=UNSHARDED_ON_WEIGHTS,
    ),
    AttentionKernel.FLASH2,
)

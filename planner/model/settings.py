"""Every modelling assumption of the analytic model, named, documented and overridable.

Defaults are physical where a physical value exists (byte sizes, collective algorithms) and
calibrated where none does (efficiencies, software overheads). ``docs/model.md`` gives the
source or the calibration row behind each one; ``tests/planner/test_calibration.py`` keeps them honest.
The settings of the whole job beyond its step (failures and checkpoints, the run's other losses,
offload's host, power) are ``JobSettings``, its base (planner/model/settings_job.py); the number
formats of the weights, gradients and optimizer states are ``FormatSettings``, the base between
(planner/model/settings_formats.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from planner.model.attention_kernels import AttentionKernel, CudnnGeneration
from planner.model.block_rows import Recompute
from planner.model.cp_ring import RingLoop
from planner.model.settings_formats import FormatSettings
from planner.model.zero_config import ZeroConfig
from planner.units import GIB, MIB

# A fused cross-entropy over bf16 logits: the forward keeps the bf16 logits and an fp32 log-sum-exp
# per row, never an fp32 copy, and the backward writes the gradient in the logits' dtype: 2 + 2
# bytes per logit at its peak. torch.compile of ``F.cross_entropy(pred.float(), ...)`` fuses it so
# (``compile_fuses_loss``), and flash-attn's Triton cross-entropy is written so (llm-foundry's
# profile, stack_profiles.py).
FUSED_CE_BYTES_PER_LOGIT = 4.0

# Tensor parallelism as DTensor's plan runs it (trainplan's trainer/tensor_parallel.py, as
# torchtitan's parallelize_llama.py ``apply_tp`` at 9dec370): each block's sequence-parallel input
# is all-gathered (PrepareModuleInput, Shard(1) -> Replicate) for the column-parallel linears that
# read it at once (wq/wk/wv, w1/w3), and the row-parallel outputs (wo/w2) are reduce-scattered
# (output_layouts=Shard(1)) into the norm that reads them next: forward and backward the
# collective's consumer waits on it, nothing runs beside it. Async TP (torch.compile's
# _micro_pipeline_tp) is not used by trainplan's trainer.
DTENSOR_TP_COMM_OVERLAP = 0.0
# torch DistributedDataParallel's gradient bucket: bucket_cap_mb=25 by default
# (torch/nn/parallel/distributed.py: ``bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)``);
# nanotron passes its config's ddp_bucket_cap_mb, 25 by default (src/nanotron/config/config.py
# l.313, trainer.py l.1156-1160 at 2411b022a75f), read 2026-12-07.
TORCH_DDP_BUCKET_BYTES = 25 * MIB


@dataclass(frozen=True)
class ModelingSettings(FormatSettings):
    # --- compute -------------------------------------------------------------------------
    # Per-GPU achievable rates live in the catalog (hw_catalog/gpus/*.toml, planner/model/
    # rates.py). The fractions below apply only to a GPU whose file has no such figure, and are
    # then a scaled estimate.
    # Achievable fraction of the dense datasheet peak for a large bf16 GEMM: the H200's
    # 742.8 / 989.4 TFLOP/s measured at 8192^3 (shared/calibration).
    matmul_peak_fraction: float = 0.75
    # GEMM efficiency falls for narrow shapes: rate x d / (d + matmul_half_dim) for each of the
    # smaller GEMM dims (wave quantisation and short K loops); calibrated on the H200 rows (grid
    # 64 / 96 / 192 / 384; 96 before the attention kernel tables, which left the GEMMs more).
    matmul_half_dim: float = 192.0
    # Achievable fraction of the datasheet HBM bandwidth for the many small eager elementwise
    # kernels of a training step (launch tails, partial waves): calibrated on the H200 rows,
    # well below the 0.89 a large device copy reaches (streaming_bandwidth_fraction). On a GPU
    # with a measured copy bandwidth the same ratio to it applies (rates.eager_bandwidth).
    hbm_bandwidth_fraction: float = 0.6
    # Flash attention's fraction of the bf16 peak on a GPU whose catalog file has no attention
    # rate: ESTIMATE, FlashAttention-2's published figure on the H100 (335 TFLOP/s forward +
    # backward at head dim 128, Dao 2023 sec. 4.1), the kernel PyTorch SDPA runs on Hopper.
    attention_peak_fraction: float = 335.0 / 989.4
    # The catalog's attention figures are stated at head dim 128, non-causal, 16K tokens; each
    # kernel's published share at the step's head dim and causal length comes from its own
    # benchmark tables (planner/model/attention_kernels.py). This is what is left on top:
    # FITTED on the H200 runs (grid 0.8 / 1.0 / 1.2, bench/crossval_h200.py re-fits it leaving
    # each run out), where the tables leave nothing to add (1.0).
    attention_shape_fraction: float = 1.0
    # The stack's attention kernel: True, cuDNN's fused flash attention (the catalog's
    # ``cudnn_attention_*`` rates) where the GPU's compute capability makes PyTorch's SDPA choose
    # it (sm90 / sm100: Hopper, Blackwell; ``attention_kernels.sdpa_prefers_cudnn``), else
    # FlashAttention-2 (``attention_*``); False, FlashAttention-2 everywhere. True for trainplan's
    # trainer: SDPA puts cuDNN first there once its bundled cuDNN is newer than 9.15, which the
    # wheels cross at torch 2.11 (huggingface/transformers#48163); the H200 calibration runs
    # (torch 2.11) ran cuDNN.
    cudnn_attention: bool = True
    # Whose rule picks cuDNN on a GPU: PyTorch SDPA's (sm90, sm100; False) or TransformerEngine's
    # (every Hopper and datacenter Blackwell part; True: Megatron-Core), attention_kernels.py.
    transformer_engine_attention: bool = False
    # Whose cuDNN's attention is timed: today's (9.19, the catalog's rates) for a plan; a
    # validation row's container may carry an older one (attention_kernels.CudnnGeneration).
    cudnn_generation: CudnnGeneration = CudnnGeneration.CUDNN_9_19
    # Speed of the stack's attention relative to the catalog's rate of its kernel: another
    # kernel (FlashAttention-3, llm-foundry's Triton flash), or a stack's own overheads around it;
    # 1 for trainplan.
    attention_kernel_factor: float = 1.0
    # Whether the stack's context parallelism runs cuDNN's attention where its kernel choice is
    # cuDNN. PyTorch's does not: trainplan's all-gather CP calls SDPA with a lower-right causal
    # mask (torch.nn.attention.bias.CausalBias), which dispatches to the flash or the efficient
    # kernel only, and torchtitan's ring attention of Dec 2024 restricted SDPA to FLASH / EFFICIENT
    # ("TODO: support cuDNN backend", torchtitan 9dec370 utils.py); TransformerEngine's CP runs its
    # fused (cuDNN) attention per chunk.
    cudnn_attention_under_cp: bool = False
    # Whether the stack's windowed attention (a sliding window shorter than the sequence, its own
    # modules) is trainplan's banded SDPA: each block of w queries computes all 2w keys of its
    # block and the one before under a mask (trainer/sliding_window.py ``sliding_window_attention``;
    # planner/model/block.py ``band_window_keys``), at the kernel's rate, which SDPA picks for a
    # masked call (cuDNN or the memory-efficient kernel; not measured). False: the stack's kernel
    # skips the tiles outside the window (FlashAttention-2's ``window_size``, TransformerEngine,
    # FlexAttention). Trial s37: the native trainer's dense [seq, seq] mask was timed as a
    # window-skipping kernel and left out of memory.
    sliding_window_band: bool = True
    # A kernel the user named (``--attention``; attention_choice.py ``with_attention``), None: the stack's own choice
    # (``cudnn_attention``). Recorded for the rules that depend on it (FlashAttention-3: Hopper only).
    attention_kernel: AttentionKernel | None = None
    # How the LM head + cross-entropy holds its logits. > 0: over chunks of this many tokens,
    # never the full-vocabulary fp32 logits (trainplan's trainer, trainer/loss.py: its default
    # RunSettings.loss_chunk_tokens, used wherever the head is not tensor-parallel); the loss
    # backward recomputes each chunk's logits (one more head forward GEMM). 0: the full logits
    # of the micro-batch at once (stock HF ``model(labels=...)``, torch/Megatron cross-entropy).
    loss_chunk_tokens: int = 1024
    # Loss: bf16 logits, fp32 upcast, log-softmax, its gradient and the cast back, read and
    # written about three times over per logit (bytes per logit, forward + backward).
    loss_traffic_bytes_per_logit: float = 36.0
    # torch.compile fuses elementwise chains: traffic and kernel count shrink by this factor.
    compile_elementwise_factor: float = 0.5
    # Elementwise traffic of the software stack without torch.compile, relative to the
    # PyTorch-eager kernel count of ``elementwise_bytes_per_token``: 1 for eager modules;
    # libraries of hand-fused kernels (Apex / TransformerEngine: fused norms, bias-GeLU,
    # bias-dropout-add, fused RoPE and SwiGLU) move about what torch.compile leaves.
    elementwise_fusion_factor: float = 1.0
    # Flash attention (Dao et al. 2022; PyTorch SDPA, cuDNN, TransformerEngine) keeps the
    # s x s score matrix on chip. Without it (Megatron-LM before flash attention) the scores
    # go through HBM: see unfused_attention_bytes_per_score.
    flash_attention: bool = True
    # HBM bytes per score element and head in one unfused 16-bit attention forward: QK^T
    # writes 2, fused scale-mask-softmax reads 2 and writes 2, attention dropout writes a
    # 1-byte mask and reads/writes 2 + 2, the AV batched GEMM reads 2 (~13). The backward
    # is counted as twice the forward and a recompute as one more forward. These tensors are
    # far larger than L2 and stream at copy speed: streaming_bandwidth_fraction.
    unfused_attention_bytes_per_score: float = 13.0
    # ALiBi's bias in unfused attention, added by the QK^T GEMM's beta term (Megatron-DeepSpeed's
    # ``matmul_result = alibi.baddbmm(...)``, transformers' BloomAttention likewise): PyTorch
    # copies the broadcast bias into the output (writes 2) and the GEMM reads it back (2), per
    # score in every forward (a recompute's too).
    alibi_bias_bytes_per_score: float = 4.0
    # The same for Hugging Face's eager attention with soft-capped scores (Gemma 2, which has no
    # SDPA path: planner/model/step_time.py eager_softcap_attention), kernel by kernel from
    # transformers' eager_attention_forward (models/gemma2/modeling_gemma2.py): QK^T writes 2;
    # the cap's divide, tanh and multiply read 2 and write 2 each (12); the mask add reads 2,
    # writes 2; softmax in fp32 reads 2, writes 4; the cast back reads 4, writes 2; AV reads 2
    # (no dropout kernel: attention_dropout 0): 32.
    eager_softcap_attention_bytes_per_score: float = 32.0
    # A large contiguous read-modify-write reaches the device-copy bandwidth (H200: 4.26 TB/s
    # measured vs 4.8 spec = 0.89), unlike the many small eager kernels of
    # hbm_bandwidth_fraction.
    streaming_bandwidth_fraction: float = 0.89
    # FP8 GEMMs (per-tensor scaling) on a GPU with no catalog FP8 GEMM rate reach this fraction
    # of the dense FP8 peak: ESTIMATE, the H100's (1,311 / 1,979, hw_catalog/gpus/h100-sxm.toml).
    # The scaling casts are counted apart (fp8_cast_bytes_per_element). Attention and the LM
    # head stay in 16-bit.
    fp8_matmul_peak_fraction: float = 0.66
    # HBM bytes per GEMM input and output-gradient element and token of the FP8 recipe's casts,
    # forward + backward: amax read (2) + bf16 read (2) + fp8 write (1) per cast, plus the fp8
    # transposed copy the weight-gradient GEMM reads (1) (TransformerEngine's fused
    # cast-transpose; torchao float8 the same): 6. Moved at the eager bandwidth.
    fp8_cast_bytes_per_element: float = 6.0
    # The FP8 recipes run the forward GEMMs with fast accumulation and the two backward GEMMs
    # with FP32 promotion (split accumulator): TransformerEngine's Float8CurrentScaling and
    # DelayedScaling ``fp8_gemm_fprop = MMParams(use_split_accumulator=False)``, dgrad and wgrad
    # True (transformer_engine/common/recipe/__init__.py); torchao's Float8LinearConfig
    # ``use_fast_accum`` on the output GEMM only (pytorch/ao#2377). The catalog's FP8 GEMM figures
    # are split-accumulator rates (MAMF times torch._scaled_mm with its default
    # use_fast_accum=False). Where the GPU has the mode (Hopper: GPUSpec.fp8_fast_accumulation)
    # the forward GEMMs run this much faster: ESTIMATE, the middle of the "1.1x to 1.2x" measured
    # in pytorch/ao#2377.
    fp8_fast_accum_forward_speedup: float = 1.15
    # fp8 x tensor parallelism: the sequence-parallel all-gathers (block inputs forward, row-
    # parallel output gradients backward) move float8, 1 byte an element, and the column-parallel
    # linears save that float8 copy for backward: torchao's Float8ColwiseParallel /
    # Float8RowwiseParallel / PrepareFloat8ModuleInput, as torchtitan's parallelize_llama and
    # trainer/tensor_parallel.py use them. The reduce-scatters stay bf16.
    fp8_tp_float8_all_gather: bool = True
    # --- host (CPU) dispatch ---------------------------------------------------------------
    # Host time to dispatch one transformer block's forward + backward kernels in eager mode,
    # FSDP2 hooks and collectives included (calibrated on the H200 rows, small models,
    # where the GPU outruns the host).
    host_overhead_per_block_s: float = 5.5e-3
    # Host dispatch a recomputed block adds, as a share of its forward + backward dispatch: its
    # forward again (the forward is 0.45-0.47 of an HF Llama block's eager dispatch, measured here
    # on CPU with tiny tensors, where dispatch is the time) plus torch.utils.checkpoint's own
    # saved-tensor hooks (a non-reentrant checkpointed block took 2.2-2.4x the plain block's host
    # time there, kernel time included), so between ~0.47 and ~1.3. FITTED within that range on
    # the H200 runs (their recompute is the model's own non-reentrant checkpointing:
    # shared/calibration/README.md), re-fitted leaving each run out (validation/heldout.py
    # H200_GRID); it was 1/3 (the FLOP share of a recomputed forward) before.
    recompute_host_share: float = 0.7
    host_overhead_per_step_s: float = 4.0e-3
    compile_host_factor: float = 0.35
    # Fraction of host dispatch hidden behind GPU work (queue runs ahead of the GPU).
    host_overlap: float = 1.0
    # --- sharded data parallelism's copies and the offload link --------------------------
    # FSDP2 per all-gather pass: fp32 shard -> bf16 copy-in, gather, copy-out (bytes/param);
    # per reduce-scatter: bf16 grad -> fp32, copy-in, reduce, shard out.
    fsdp_gather_copy_bytes_per_param: float = 8.0
    fsdp_reduce_copy_bytes_per_param: float = 12.0
    # CPU offload moves fp32 grads down and params up over the host link and runs AdamW on
    # the host (bytes per param per step over PCIe).
    offload_bytes_per_param: float = 8.0
    host_link_bandwidth: float = 25e9
    # --- memory ----------------------------------------------------------------------------
    # Bytes per logit the loss backward holds at its peak (``logits_loss_bytes``): 12 for an
    # fp32 log-softmax with its saved output, incoming gradient and result.
    loss_bytes_per_logit: float = 12.0
    # Bytes per logit at the loss backward's peak where the LM head is tensor-parallel and the loss
    # runs under torch's ``loss_parallel`` (trainplan's trainer, trainer/step.py
    # ``uses_loss_parallel``; torchtitan): its backward (torch/distributed/tensor/parallel/loss.py
    # ``_nll_loss_and_log_softmax_backward``) builds ``(zeros_like(x) + exp(x)) * grad`` beside the
    # saved fp32 log-softmax output x: x, the zeros, exp(x) until the add returns, and the sum,
    # 4 x 4 bytes (the unfused log-softmax backward of one GPU: 12). None: the stack's own
    # vocabulary-parallel loss, ``loss_bytes_per_logit`` at any tp (Megatron).
    loss_parallel_bytes_per_logit: float | None = 16.0
    # torch.compile compiles the loss too (torchtitan's build_cross_entropy_loss under
    # training.compile, from bbb1b616, 2025-04-02; 9dec370 of its 2024 benchmarks had the line
    # commented out): Inductor fuses the fp32 upcast into the log-softmax reductions and writes
    # the gradient in bf16, so the loss backward holds ``FUSED_CE_BYTES_PER_LOGIT``.
    compile_fuses_loss: bool = False
    # Attention that materialises its s x s scores (planner/model/attention_scores.py) saves some of them
    # for backward, per score and head, masked and out-of-window ones too. Hugging Face's eager
    # attention with soft-capped scores (transformers models/gemma2/modeling_gemma2.py,
    # eager_attention_forward: matmul * scaling, / softcap, tanh, * softcap, + mask, softmax(dtype
    # =float32).to(query.dtype), dropout, matmul with V), by what each op's derivative keeps
    # (torch derivatives.yaml): tanh its output (2), _softmax its fp32 output (4), the second
    # matmul its bf16 input, the cast back (2); the scalar mul/div, the mask add and the casts keep
    # nothing, and dropout at p = 0 (Gemma 2's attention_dropout) returns its input: 2 + 4 + 2 = 8.
    # (In fp32 training the cast back is the softmax output itself: 4 + 4 = 8 as well. Attention
    # dropout p > 0 on CUDA, native_dropout, would add its 1-byte mask.) Counted with autograd's
    # saved-tensor hooks on transformers' own model: tests/trainer/test_eager_attention_saved.py.
    eager_softcap_attention_saved_bytes_per_score: float = 8.0
    # Its backward holds above the saved ones, at the softmax backward (the bf16 probabilities
    # already freed by the AV matmul's backward): the fp32 gradient of the probabilities (4) and
    # the fp32 gradient of the scores it writes (4), less the freed bf16 probabilities (2): 6.
    # One block at a time (the one whose backward runs).
    eager_softcap_attention_backward_bytes_per_score: float = 6.0
    # Megatron-LM's unfused attention (flash_attention False; megatron/model/transformer.py
    # ParallelAttention: baddbmm, FusedScaleMaskSoftmax, attention dropout, bmm): the fp16
    # softmax output (2), the dropout mask (1) and the dropout output (2): Korthikanti et al.
    # 2022, sec. 4.1, the 5as/h of their 34 + 5as/h bytes per sbh: 5.
    unfused_attention_saved_bytes_per_score: float = 5.0
    # Its backward: the bmm's gradient of the dropout output (2), the dropout backward's result
    # (2), the fused softmax backward in place on it; the dropout output freed by then: 2.
    unfused_attention_backward_bytes_per_score: float = 2.0
    # Korthikanti et al. 2022's selective activation recomputation (sec. 5; Megatron-LM's
    # --recompute-granularity selective): the attention core (QK^T, softmax, dropout, AV) is
    # re-run in backward, so a block keeps none of its scores; one block's are rebuilt at a time
    # (with their gradients: ``memory.score_backward_bytes``). Only the materialised scores
    # change: flash attention saves none. The published Megatron-LM rows that name it are read
    # as no recompute otherwise (validation/published_rows.py ``recompute_for``).
    recompute_attention_core: bool = False
    # What ``selective`` checkpoints: False, every other block whole (trainplan's trainer,
    # ``trainer/parallel.py``); True, every block under torchtitan's per-op policy, which keeps
    # the odd-numbered matmuls' and attention's outputs and recomputes the rest
    # (planner/model/op_checkpoint.py; MoE and MLA blocks keep the every-other-block reading).
    # Memory only: its recompute is timed as every other block's (half the GEMMs and attention
    # again), while the policy runs about a third of the GEMMs, no attention and every elementwise
    # pass again: not timed apart (review s41).
    selective_per_op: bool = False
    # Output-discarding recompute of whole modules (Megatron-Core ``recompute_modules``; rows
    # tagged in planner/model/block.py): their outputs are not saved, and their GEMMs and passes
    # run once more in backward. trainplan's trainer recomputes none of them.
    recompute_modules: frozenset[Recompute] = frozenset()
    # Blocks whose saved activations go to host memory during the forward (Megatron-Core's
    # ``cpu_offloading_num_layers``, TransformerEngine cpu_offload.py): at the forward's end
    # only the other blocks' activations are on the device. Megatron allows it at pp 1 without
    # recompute. trainplan's trainer offloads none; the transfers overlap compute (not timed).
    offloaded_activation_blocks: int = 0
    # Unaccounted allocations (cuBLAS workspaces, RNG state, small buffers), bytes.
    misc_allocated_bytes: float = 96 * MIB
    # Caching-allocator reserve above the allocated peak: a fraction of the largest transient
    # blocks (logits-sized buffers) plus a fraction of the per-step gradient churn.
    reserve_transient_fraction: float = 0.4
    reserve_static_fraction: float = 1.1
    reserve_floor_bytes: float = 512 * MIB
    # Gradients in a buffer allocated once, before the first step, that lives through every
    # forward and backward (Megatron's param_and_grad_buffer; Megatron-DeepSpeed's BF16_Optimizer
    # fp32 gradient groups; `--stack deepspeed`'s ZeRO optimizer is not read as one), so it is on
    # the device at the start of backward even when no earlier micro-batch has filled it (trial
    # s34: at grad_accum 1 Megatron plans left it out and were judged to fit 20 GiB under what the
    # same layout needs at grad_accum 2). False: FSDP2 and DDP create gradients in backward and
    # free them at the optimizer's zero_grad.
    persistent_grad_buffer: bool = False
    # CUDA context + kernels, outside the caching allocator (not in max_memory_reserved).
    cuda_context_bytes: float = 0.6 * GIB
    # FSDP2 all-gathers one block ahead (implicit prefetch), so two blocks are unsharded.
    fsdp_unsharded_blocks: int = 2
    # Fit rule: reserved + context <= capacity * (1 - memory_headroom).
    memory_headroom: float = 0.05
    # --- communication -------------------------------------------------------------------------
    # Latency (alpha) of one ring step, intra-node and inter-node, plus a fixed cost per
    # collective: NCCL's own tuning model (src/graph/tuning.cc, ring with the Simple protocol
    # that carries large messages): 3.4 us per NVLink step, 14 us per network step, 8.4 us base;
    # 5.7 us per step of a ring whose path inside the node is PCIe (hwLat PCI, Ring, Simple).
    latency_scaleup_s: float = 3.4e-6
    latency_pcie_s: float = 5.7e-6
    latency_network_s: float = 14e-6
    collective_base_latency_s: float = 8.4e-6
    # Achievable fraction of link bandwidth for large NCCL collectives (busbw / line rate):
    # nccl-tests reach ~0.75-0.85 of NVLink/NVSwitch and ~0.85-0.9 of IB line rate.
    scaleup_bandwidth_fraction: float = 0.75
    network_bandwidth_fraction: float = 0.8
    # Fraction of data-parallel (FSDP/ZeRO/DDP) traffic hidden behind compute.
    dp_comm_overlap: float = 0.85
    # Gradient bytes per all-reduce of a DDP (sharding none) reduction: the per-call message a
    # network's measured curve is read at (planner/model/comm.py curve_bus_bandwidth; no other
    # network reads it). None: one all-reduce per FSDP2 unit, a block's gradient (trainplan's and
    # torchtitan's DDP is FSDP2's replicate, trainer/parallel.py); torch DDP's buckets:
    # ``TORCH_DDP_BUCKET_BYTES``. Megatron-Core's own buckets (max(40M, 1M x dp) parameters) are
    # not modelled: its rows read a block's gradient, the same order.
    ddp_bucket_bytes: float | None = None
    # A DDP reduction hides under the last micro-batch's backward only (step_time.py dp_window_s):
    # torch DDP's Reducer (torch/nn/parallel/distributed.py, autograd hooks; no_sync for inner
    # micro-batches) and FSDP2's replicate (post-backward hooks). False: under the whole step's
    # compute, as Megatron's rows were measured to hide (docs/validation.md, session 39's trial).
    ddp_reduces_in_backward: bool = True
    # ... but with a pipeline (pp > 1) nothing hides it: torch.distributed.pipelining's schedules run every
    # micro-batch's backward of an FSDP2 stage (trainplan's replicate, torchtitan's fully_shard) without the
    # sync and reduce the stage's gradients after its last backward (torch 2.13 pipelining/stage.py
    # ``backward_maybe_with_nosync``, ``perform_reduce_grad``; schedules.py calls it after the backward loop),
    # and the first stage's last backward ends the step (review56). Read where ``ddp_reduces_in_backward``.
    pipeline_reduces_after_backward: bool = True
    # DeepSpeed's ZeRO buckets and streams (planner/model/zero_collectives.py); None: trainplan's
    # FSDP2 units, one collective per block and pass, all on the side stream.
    deepspeed_zero: ZeroConfig | None = None
    # Fraction of tensor-parallel traffic hidden (Megatron TP comm overlap, async TP): none under
    # trainplan's trainer, whose tensor parallelism is DTensor's plan (``DTENSOR_TP_COMM_OVERLAP``).
    tp_comm_overlap: float = DTENSOR_TP_COMM_OVERLAP
    # Fraction of pipeline point-to-point traffic hidden.
    pp_comm_overlap: float = 0.5
    # Point-to-point transfers on a pipeline rank's critical path per micro-batch and model chunk:
    # 2, its activation forward and its gradient backward (receives meet the peer's sends).
    # DeepSpeed's PipelineEngine runs SendActivation, RecvGrad, RecvActivation and SendGrad as
    # separate blocking instructions (deepspeed/runtime/pipe/schedule.py TrainSchedule,
    # pipe/p2p.py dist.send / dist.recv, DeepSpeed 56c5223 of 2022-04): 4.
    pp_transfers_per_microbatch: float = 2.0
    # HBM bytes per local parameter after every micro-batch's backward to add its 16-bit gradient
    # into an fp32 accumulation buffer: 0 where gradients are reduced each micro-batch (FSDP2,
    # its copies are fsdp_reduce_copy_bytes_per_param) or accumulated inside the weight-gradient
    # GEMM. DeepSpeed's BF16_Optimizer (runtime/bf16_optimizer.py ``hp_grad.add_(lp.grad.to(
    # fp32))`` after each backward, DeepSpeed 56c5223): the cast reads 2 and writes a 4-byte
    # temporary, the add reads 4 + 4 and writes 4 = 18.
    grad_accum_bytes_per_param: float = 0.0
    # The tied embedding's gradient summed between the first and last pp rank in fp32 and whole
    # (DeepSpeed's PipelineEngine all-reduces ``weight._hp_grad``, pipe/engine.py
    # _exec_reduce_tied_grads), not in grad_bytes and sharded as the step left it.
    tied_grad_fp32_unsharded: bool = False
    # How K and V cross the cp ranks. False (trainplan's trainer, trainer/context_parallel.py;
    # Llama 3's all-gather CP): every rank gathers the whole sequence's K and V before attention
    # and keeps them for backward. True (Megatron-Core/TransformerEngine ring attention): K,V
    # chunks pass around the ring, each rank keeps only its own.
    cp_ring_attention: bool = False
    # The stack's ring-attention loop as its code runs it (planner/model/cp_ring.py: torch's fp32
    # merges and gradient accumulators per ring step, its non-causal half-chunk steps); None: one
    # SDPA call per block (trainplan's all-gather), or a loop this model has not read.
    cp_ring_loop: RingLoop | None = None
    # Sequence parallelism with tensor parallelism: torch's DTensor ColwiseParallel (trainplan's
    # trainer/tensor_parallel.py) saves the all-gathered (whole-sequence) input of each
    # column-parallel linear for its weight gradient; Megatron saves only its 1/tp sequence shard
    # and all-gathers it again in backward (Korthikanti et al. 2022, sec. 4.2.2, their 34 sbh / t).
    sp_saves_gathered_inputs: bool = True
    # Sequence parallelism itself (Korthikanti et al. 2022, arXiv 2205.05198 sec. 4.2.2): under tp
    # the norms and residual adds run on 1/tp of the sequence and the block input is kept split.
    # False: every tp rank runs them on the whole sequence and keeps them whole; Megatron-LM before
    # it (2021) and BigScience's Megatron-DeepSpeed, which has no --sequence-parallel (megatron/
    # arguments.py at bigscience-workshop/Megatron-DeepSpeed 8387ae17).
    sequence_parallel: bool = True
    # A parallel attention/MLP block (``ModelShape.parallel_block``) reduces its two row-parallel
    # outputs once forward; backward its two column-parallel inputs' gradients are reduced once
    # only where the stack gathers the block input once for both branches (Falcon's Gigatron:
    # arXiv 2311.16867 sec. 4.3.4, "cuts the number of all_reduce necessary from two to one per
    # layer"); GPT-NeoX's library keeps an f operator in each ColumnParallelLinear, and every other
    # stack here has no parallel block of its own: one reduction per branch (review s39).
    parallel_block_single_gather: bool = False
    # DeepSpeed activation checkpointing's ``partition_activations`` (Megatron-DeepSpeed's
    # --partition-activations): a checkpointed block keeps its input as a 1/tp slice and all-gathers
    # it over tp, blocking, before its recompute (deepspeed/runtime/activation_checkpointing/
    # checkpointing.py ``gather_partitioned_activations``, DeepSpeed edaa7221). Without sequence
    # parallelism only: under it the input is already split.
    partition_activations: bool = False
    # What a block's FP8 linears save for the weight gradient. False: the compute-dtype input
    # (trainplan's torchao float8 linears outside tensor parallelism). True: TransformerEngine's
    # Linear / LayerNormLinear save the FP8-quantised input they cast for the forward GEMM
    # (transformer_engine/pytorch/module/linear.py, layernorm_linear.py: the saved ``inputmat`` /
    # ``ln_out`` is the quantised tensor), 1 byte an element; the attention output, which the
    # attention kernel keeps in bf16 as well, gets a 1-byte copy on top.
    fp8_saves_float8_linear_inputs: bool = False
    # A gated MLP's activation. False: eager SiLU-and-multiply saves gate, SiLU output, up and
    # the product. True: a fused SwiGLU that saves only its input (gate and up) and recomputes
    # the SiLU in backward (Megatron-Core megatron/core/fusions/fused_bias_swiglu.py,
    # ``SwiGLUFunction``: ``ctx.save_for_backward(input)``); the product stays, as the down
    # projection's input.
    fused_glu_saves_input_only: bool = False
    # Fraction of the context-parallel KV exchange hidden behind attention. trainplan's gather
    # is issued right before the attention that needs it, so none is hidden.
    cp_comm_overlap: float = 0.0
    # --- mixture of experts (planner/model/moe.py) -------------------------------------------
    # Tokens the busiest expert-parallel rank receives over the mean (max/mean load), which sets
    # its expert GEMMs, dispatched activations and all-to-all volume. ESTIMATE from the
    # capacity factors MoE runs are sized with: GShard (Lepikhin et al. 2020, sec. 2.2) and
    # Switch (Fedus et al. 2021, sec. 2.2, Table 1) train with capacity factor 1.0-1.25 and drop
    # few tokens at 1.25, i.e. the balanced routers' busiest expert stays near 1.25x the mean.
    moe_token_imbalance: float = 1.25
    # Fraction of the dispatch/combine all-to-alls hidden behind compute. trainplan's MoE block
    # (trainer/moe.py) waits for each all-to-all before the expert GEMMs that need it: none.
    # (DeepSeek-V3's DualPipe overlaps them almost entirely, sec. 3.2.1 of its report.)
    ep_comm_overlap: float = 0.0
    # Megatron-Core's combined 1F1B hides one micro-batch's all-to-alls behind another's compute:
    # its warm-up forwards and cool-down backwards have none beside them (moe.a2a_unpaired_share).
    ep_overlap_needs_pairs: bool = False
    # What a routed expert MLP saves for backward. False: trainplan's block (trainer/moe.py:
    # the dispatched copy h, SwiGLU's four f-wide tensors, the expert output h kept by the
    # weighted combine). True: a grouped MLP with the router probabilities fused into the
    # activation (Megatron-Core TEGroupedMLP, megatron/core/transformer/moe/experts.py with
    # ``weighted_bias_swiglu``): fc1 input h, fc1 output 2f (the SwiGLU input), fc2 input f, one
    # fp32 probability; under FP8, TransformerEngine saves the two linear inputs as FP8 (1 byte).
    moe_grouped_mlp: bool = False
    # The SwiGLU input of the experts is cached in FP8 (DeepSeek-V3 report sec. 3.3.4, "these
    # activations are also stored in FP8 with our fine-grained quantization method").
    moe_fp8_activation_cache: bool = False
    # Host dispatch per locally held expert and block (forward + backward), on top of
    # ``host_overhead_per_block_s``: a grouped GEMM that loops over the experts launches each
    # one's fc1/fc2 forward, data- and weight-gradient GEMMs (6) and, under FP8, the casts of
    # their inputs and output gradients (4). 0: not counted apart from the block's dispatch
    # (trainplan's profile: its per-expert Python loop, trainer/moe.py, is not yet measured).
    moe_gemm_launches_per_local_expert: float = 0.0
    moe_fp8_cast_launches_per_local_expert: float = 0.0
    # Of those, the forward ones (fc1 and fc2 forward GEMMs; the casts of their inputs): the
    # launches issued after the dispatcher's host sync (``moe_host_sync``).
    moe_forward_gemm_launches_per_local_expert: float = 0.0
    moe_forward_fp8_cast_launches_per_local_expert: float = 0.0
    # Seconds of host time per such launch (the CUDA launch plus the framework's C++ loop).
    moe_launch_s: float = 0.0
    # Router, token-dispatcher and combine launches per MoE block and micro-batch (gating GEMM,
    # score function, top-k, load-balancing loss, split sizes, permute, all-to-alls, unpermute),
    # at ``moe_launch_s`` each: those issued before the host sync, after it (forward), and in
    # backward. Counted from the stack's source (MEGATRON_CORE_SETTINGS); 0: not counted apart
    # from ``host_overhead_per_block_s`` (trainplan's profile: its router is not yet measured).
    moe_dispatch_launches_pre_sync: float = 0.0
    moe_dispatch_launches_post_sync: float = 0.0
    moe_dispatch_launches_backward: float = 0.0
    # The MoE block's forward copies the per-expert split sizes to the host and waits for them
    # before its all-to-all / grouped GEMM, so the host cannot run ahead of the GPU across it
    # (docs/model.md, "Host sync of the token dispatcher"). True for trainplan's block:
    # trainer/moe.py ``MoE._dispatch_and_run`` calls ``counts.tolist()`` (and, with ep, the
    # received counts' ``.tolist()``) every forward.
    moe_host_sync: bool = True
    # Node-limited routing: each token's experts lie on at most this many nodes, and a token
    # crosses the network once per node it visits (then is forwarded over NVLink): DeepSeek-V3
    # report sec. 2.1.2 and 3.2.2 (M = 4). 0: no limit (a copy per routed expert crosses).
    moe_max_nodes_per_token: int = 0
    # Hierarchical dispatch without a node limit: the dispatcher sends a token once to each other
    # node holding one of its experts and forwards it to them over NVLink (DeepEP's internode
    # "normal" kernels, "forwarding data from NVLink domain to RDMA domain", deepseek-ai/DeepEP
    # README, the scheme of the DeepSeek-V3 report sec. 3.2.2; HybridEP's "hierarchical
    # communication design", DeepEP docs/README_Hybrid-EP.md: that it deduplicates per node the
    # same way is an ESTIMATE). False: every routed copy to another node crosses (NCCL
    # all-to-all: Megatron-Core's alltoall dispatcher, trainplan's block).
    moe_hierarchical_dispatch: bool = False
    # The routing probabilities reach the experts in fp32 (Megatron-Core's flex dispatcher: its
    # HybridEP and DeepEP backends cast them, megatron/core/transformer/moe/token_dispatcher.py
    # l.1033-1039 and l.1178-1184 at d7288711; the alltoall dispatcher keeps the router's bf16).
    # Biased experts' per-expert bias loop then runs in fp32 (planner/model/moe.py
    # ``EXPERT_BIAS_TRAFFIC_FP32_PROBS``); nothing else here reads it.
    moe_probs_fp32: bool = False
    # --- FLOP conventions --------------------------------------------------------------------
    # Causal attention does half the score work; MFU here counts it causally (PaLM appendix B
    # counts it non-causally: set False to compare with Megatron/NeMo "model TFLOP/s").
    causal_attention_flops: bool = True

    def but(self, **changes: Any) -> ModelingSettings:
        """A copy with some settings changed (unknown names raise TypeError)."""
        return replace(self, **changes)


DEFAULT_SETTINGS = ModelingSettings()

"""The number formats of the weights, gradients and optimizer states, and the bytes the optimizer
step streams per parameter: ``FormatSettings``, a base of ``ModelingSettings``
(planner/model/settings.py), kept here so that each module stays readable. A run's choices of
them (``--grad-reduce-in-bf16``, ``--precision-aware-optimizer``, ``--pure-bf16``) are
planner/model/optimizer_precision.py's ``OptimizerPrecision.applied``.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.layout import Sharding
from planner.model.settings_job import JobSettings, clip_streamed_bytes
from planner.units import BF16_BYTES, FP32_BYTES


def adamw_streamed_bytes(weight: float, grad: float, moments: float) -> float:
    """Bytes a fused AdamW step streams per parameter: it reads the weight it updates, the gradient
    and both moments (``moments``: their two widths together) and writes the weight and the
    moments back: 2 x weight + grad + 2 x moments (fp32 throughout: 4 + 4 + 8 read, 4 + 8 written, 28)."""
    return 2.0 * weight + grad + 2.0 * moments


@dataclass(frozen=True)
class FormatSettings(JobSettings):
    # --- the optimizer step ------------------------------------------------------------------
    # Fused AdamW over fp32 master weights, gradients and moments (``adamw_streamed_bytes``).
    # Derived from the widths below where a run's formats change them (pure bf16: 14); a profile
    # that sets only ``adam_state_bytes`` (deepseek-v3's bf16 moments) keeps 28 (its rows as fitted).
    adamw_bytes_per_param: float = adamw_streamed_bytes(FP32_BYTES, FP32_BYTES, 2 * FP32_BYTES)
    # Gradient clipping reads every gradient once (foreach norm) and scales it (read+write).
    clip_bytes_per_param: float = clip_streamed_bytes(FP32_BYTES)
    # --- the formats --------------------------------------------------------------------------
    # Bytes per gradient element held for the step and moved by the data-parallel reductions:
    # fp32 (trainplan's FSDP2 reduce dtype, Megatron's grad_reduce_in_fp32). 2: bf16 gradient
    # buffers, reduced in bf16.
    grad_bytes: float = 4.0
    # A ZeRO optimizer (stage >= 1) that keeps its gradient buckets and partitions in the model's
    # dtype, the fp32 copy of the rank's partition made at the step (``grad_element_bytes``):
    # DeepSpeed's stage_1_and_2 and stage 3 where data_types.grad_accum_dtype is unset (engine.py:
    # it defaults to the model dtype; docs/deepspeed-zero-reading.md 1a). Stage 0 under bf16 runs
    # its BF16_Optimizer with fp32 gradients (``grad_bytes``).
    zero_grads_in_model_dtype: bool = False
    # 16-bit gradients autograd leaves beside an fp32 accumulator, per local parameter, unsharded.
    # 0: none (Megatron accumulates into fp32 main_grad in the wgrad GEMM; FSDP2 reduces them away).
    # DeepSpeed's BF16_Optimizer (ZeRO stage 0/1) clears them only as the next backward starts, so
    # a whole set stands beside the fp32 one after every micro-batch (bf16_optimizer.py backward and
    # runtime/pipe/engine.py _exec_backward_pass: clear_lp_grads, backward,
    # update_hp_grads(clear_lp_grads=False); DeepSpeed 56c5223). Not under ZeRO-2/3 (memory.py).
    lp_grad_bytes: float = 0.0
    # A 16-bit shard kept beside the fp32 master shard (bytes per parameter over the group). 0: FSDP2
    # (its shard is the master; bf16 is made at the all-gather). DeepSpeed ZeRO-3 keeps both (stage3.py
    # ``fp16_partitioned_groups_flat`` beside ``fp32_partitioned_groups_flat``): ZeRO's (2 + 2 + K) / N.
    lp_param_shard_bytes: float = 0.0
    # AdamW's exp_avg + exp_avg_sq per parameter: fp32 (8); bf16 moments halve it.
    adam_state_bytes: float = 8.0
    # The optimizer's master copy of each parameter (sharded with the moments from ZeRO-1 on):
    # fp32 (4). 2: apex's DistributedFusedAdam with ``store_param_remainders``, which NeMo 1.x
    # turns on for bf16 working weights (megatron_amp_O2): it keeps only the low 16 bits of the
    # fp32 master, the bf16 weights hold the rest (NeMo megatron_base_model.py
    # setup_optimization, 24.03-24.07). Checkpoints still hold fp32 (goodput.py).
    master_param_bytes: float = 4.0
    # A sharded optimizer casts its 16-bit gradient shard to fp32 at the step (Megatron's distributed
    # optimizer: ``shard_main_param.grad = shard_model_grad.float()``; DeepSpeed's partitions
    # likewise; ``memory.optimizer_grad_copy_bytes``). Off: Megatron-Core's precision-aware
    # optimizer hands TE FusedAdam the shard itself (``shard_main_param.decoupled_grad =
    # shard_model_grad``, distrib_optimizer.py ``_copy_model_grads_to_main_grads``; review s40).
    optimizer_copies_16bit_grads: bool = True
    # The weights are the optimizer's only copy, in the compute dtype: pure bf16's
    # (``OptimizerPrecision.pure_bf16``; fp32 training's are too, by its precision). A checkpoint holds them
    # at that width (goodput.py); what the step holds beside them is ``state_memory.computes_on_stored_weights``'s.
    # False: an fp32 master apart from them.
    weights_are_master: bool = False
    # The shardings under which the stack's data parallelism computes with the module's own stored weights
    # where they are in the compute dtype (fp32 training, pure bf16: ``state_memory.computes_on_stored_weights``),
    # with no copy apart: Megatron's distributed optimizer below ZeRO-3 (views of its fp32 weights, trial s40;
    # stack_profiles.py ``MEGATRON_FP32_VIEWS``); without sharding only (``UNSHARDED_ON_WEIGHTS``), DeepSpeed's
    # stage 0 (its ZeRO-1/2 steps a clone beside the module) and torch's DistributedDataParallel, which HF
    # Trainer / accelerate and Composer (llm-foundry; its FSDP1 NO_SHARD likewise) wrap a model in without
    # sharding. None: FSDP2 (trainplan's trainer/parallel.py, torchtitan's ``fully_shard`` at a shard degree of 1,
    # models/llama3/parallelize.py at b5bcd76), whose ``replicate`` and ``fully_shard`` keep the stored weights
    # apart from the copy they gather even where no cast is needed (review55 at bf16, bf16rest56 at fp32:
    # torch 2.13 on gloo ranks); FSDP1's sharded strategies likewise (``_full_param_padded``,
    # torch 2.13 fsdp/_flat_param.py l.1277-1292).
    computes_on_weights_under: tuple[Sharding, ...] = ()
    # Bytes per gradient element the data-parallel reductions move where they differ from the held
    # ``grad_bytes`` (None: the same; ``saved_bytes.reduced_grad_bytes``): torchtitan's pure bf16.
    grad_reduce_bytes: float | None = None
    # What a stack's pure-bf16 run reduces its bf16 gradients in (``OptimizerPrecision.applied``):
    # bf16 where no reduce dtype is set apart (trainplan's trainer: an empty MixedPrecisionPolicy;
    # HF Trainer without --bf16: accelerate's FSDP2 plugin passes ``MixedPrecisionPolicy()``,
    # src/accelerate/utils/fsdp_utils.py l.769 at 16cb6eb). torchtitan's profile sets fp32.
    pure_bf16_reduce_bytes: float = BF16_BYTES

"""What a run chooses of its optimizer's number formats (``--grad-reduce-in-bf16``,
``--precision-aware-optimizer``, ``--pure-bf16``): the bytes a gradient, a master weight and the
AdamW moments take, on the stacks that offer the choice (``Stack.reduces_grads_in_bf16``,
``Stack.stores_param_remainders``, ``Stack.trains_pure_bf16``).

The validation rows whose recipes state the same facts use the same widths (validation/published.py
``MEGATRON_BRIDGE_FORMATS``, ``nemo_launcher_recipe``; validation/moe_recipes.py
``BRIDGE_MOE_BENCHMARK``; validation/nemo_blackwell.py ``MLPERF_RECIPE``).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel

from planner.frozen import FROZEN
from planner.model.candidates import PREC_BF16, PREC_FP16, PREC_FP32, SHARD_ZERO1
from planner.model.settings import ModelingSettings
from planner.model.settings_formats import adamw_streamed_bytes
from planner.model.settings_job import clip_streamed_bytes
from planner.model.stacks import Stack
from planner.units import BF16_BYTES

# The low 16 bits of an fp32 master weight, kept beside the bf16 working weight that holds the rest
# (TransformerEngine's FusedAdam ``store_param_remainders``; apex's DistributedFusedAdam likewise).
REMAINDER_BYTES = 2.0


class OptimizerPrecision(BaseModel):
    """The optimizer's formats one run asks for beyond its stack's profile (all off: the profile's)."""

    model_config = FROZEN

    # Megatron-Core's --grad-reduce-in-bf16 (NeMo's and Megatron-Bridge's ``grad_reduce_in_fp32`` off,
    # as their FP8 performance recipes set it): the gradient buffer and its data-parallel reductions in
    # bf16, half the bytes of fp32 (megatron-core; bf16 or fp8 weights: ``bf16_grads_refused``).
    grad_reduce_bf16: bool = False
    # Megatron-Core's --use-precision-aware-optimizer (NeMo 2's bf16 performance recipes set it):
    # TransformerEngine's FusedAdam holds the master weights, and from TE 2.1 only their 16-bit
    # remainders (megatron/core/optimizer/__init__.py: ``store_param_remainders`` where
    # ``is_te_min_version("2.1.0.dev0")``): 2 bytes a parameter in the optimizer's shard, not 4
    # (megatron-core; ``remainders_refused``). Its moments stay fp32 (``exp_avg_dtype``'s default).
    param_remainders: bool = False
    # Pure bf16 (torchtune's ``dtype: bf16``, torchtitan's ``training.dtype = "bfloat16"``, a Hugging
    # Face model loaded in bf16 and trained without mixed precision, trainplan's --pure-bf16): the
    # weights, their gradients and AdamW's moments all bf16, the weights the optimizer's only copy
    # (``Stack.trains_pure_bf16``; ``pure_bf16_refused``). "Pure" as those sources and Lightning's
    # "bf16-true" say it: no fp32 master anywhere, not merely 16-bit states beside one.
    pure_bf16: bool = False

    def applied(self, s: ModelingSettings) -> ModelingSettings:
        """``s`` with the widths this run chose; the precision-aware optimizer also reads the 16-bit
        gradient shard itself, with no fp32 copy at the step (``optimizer_copies_16bit_grads``)."""
        if self.pure_bf16:
            return pure_bf16_settings(s)
        chosen = s.but(grad_bytes=BF16_BYTES) if self.grad_reduce_bf16 else s
        if not self.param_remainders:
            return chosen
        return chosen.but(master_param_bytes=REMAINDER_BYTES, optimizer_copies_16bit_grads=False)

    def kept_under(self, stack: Stack) -> OptimizerPrecision:
        """The choices ``stack`` offers of these (a restacked plan keeps only those)."""
        return OptimizerPrecision(
            grad_reduce_bf16=self.grad_reduce_bf16 and stack.reduces_grads_in_bf16,
            param_remainders=self.param_remainders and stack.stores_param_remainders,
            pure_bf16=self.pure_bf16 and stack.trains_pure_bf16,
        )

    def words(self) -> str:
        """', bf16 gradients, master weights as remainders' for a summary line ('' when none)."""
        return (
            (", bf16 gradients" if self.grad_reduce_bf16 else "")
            + (", master weights as remainders" if self.param_remainders else "")
            + (", pure bf16 (no fp32 master)" if self.pure_bf16 else "")
        )


def pure_bf16_settings(s: ModelingSettings) -> ModelingSettings:
    """``s`` in pure bf16: the bf16 weights are the master (2 bytes, no copy apart:
    ``weights_are_master``), gradients held in bf16 and reduced as the stack reduces them
    (``pure_bf16_reduce_bytes``), AdamW's two moments bf16 (2 + 2), read by the optimizer as they are
    (``optimizer_copies_16bit_grads`` off), and the step and clipping streaming those widths
    (``adamw_streamed_bytes``, ``clip_streamed_bytes``: 14 and 6 bytes a parameter, not 28 and 12)."""
    moments = 2 * BF16_BYTES
    return s.but(
        master_param_bytes=BF16_BYTES,
        grad_bytes=BF16_BYTES,
        adam_state_bytes=moments,
        weights_are_master=True,
        optimizer_copies_16bit_grads=False,
        grad_reduce_bytes=s.pure_bf16_reduce_bytes,
        adamw_bytes_per_param=adamw_streamed_bytes(BF16_BYTES, BF16_BYTES, moments),
        clip_bytes_per_param=clip_streamed_bytes(BF16_BYTES),
    )


DEFAULT_OPTIMIZER_PRECISION = OptimizerPrecision()


def not_bf16_weights(precision) -> np.ndarray:
    """Where the weights are not bf16 (candidate codes, scalars or arrays): fp16 and fp32 training
    (fp8 keeps bf16 weights beside its fp8 GEMMs)."""
    return np.isin(precision, (PREC_FP16, PREC_FP32))


def bf16_grads_refused(precision) -> np.ndarray:
    """Where --grad-reduce-in-bf16 changes nothing Megatron-Core would run: its gradient buffer takes
    the weights' dtype once ``grad_reduce_in_fp32`` is off, fp32 under fp32 training and fp16 under fp16
    (review s40: the planner halved fp32 gradients)."""
    return not_bf16_weights(precision)


def refused_rows(chosen: OptimizerPrecision, sharding, precision, offload=False) -> np.ndarray:
    """Where the formats ``chosen`` asks cannot run (the search's filter and an estimate's rule;
    ``offload``: states on the host, a flag or an array)."""
    refused = np.zeros(np.shape(sharding), dtype=bool)
    if chosen.grad_reduce_bf16:
        refused |= bf16_grads_refused(precision)
    if chosen.param_remainders:
        refused |= remainders_refused(sharding, precision)
    if chosen.pure_bf16:
        refused |= pure_bf16_refused(precision, offload)
    return refused


def pure_bf16_refused(precision, offload) -> np.ndarray:
    """Where --pure-bf16 cannot run (candidate codes, scalars or arrays): it is bf16 weights, so only
    under --precision bf16 (fp16 needs a loss scaler over fp32 masters, fp8 and fp32 train other
    weights), and not with host offload, whose CPU optimizer is modelled in fp32 only (planner/model/
    host.py: its states, its PCIe bytes and its AdamW rate were read from fp32 implementations; no
    source timed a bf16 one)."""
    return (np.asarray(precision) != PREC_BF16) | np.asarray(offload, dtype=bool)


def remainders_refused(sharding, precision) -> np.ndarray:
    """Where --precision-aware-optimizer cannot run (candidate codes, scalars or arrays): Megatron-Core
    asserts the distributed optimizer ("--use-precision-aware-optimizer only supported with
    distributed optimizer", OptimizerConfig), and 16-bit remainders rebuild an fp32 master only beside
    bf16 weights (TE FusedAdam: no effect otherwise), so not under fp16 or fp32 (trial s40)."""
    return (np.asarray(sharding) < SHARD_ZERO1) | not_bf16_weights(precision)

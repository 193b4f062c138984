"""What a run chooses of its optimizer's number formats (``--grad-reduce-in-bf16``,
``--precision-aware-optimizer``): the bytes a gradient and a master weight take, on the stacks
that offer the choice (``Stack.reduces_grads_in_bf16``, ``Stack.stores_param_remainders``).

The validation rows whose recipes state the same facts use the same widths (validation/published.py
``MEGATRON_BRIDGE_RECIPE``, ``nemo_launcher_recipe``; validation/nemo_blackwell.py ``MLPERF_RECIPE``).
"""

from __future__ import annotations

from pydantic import BaseModel

from planner.frozen import FROZEN
from planner.model.settings import ModelingSettings
from planner.model.stacks import Stack
from planner.units import BF16_BYTES

# The low 16 bits of an fp32 master weight, kept beside the bf16 working weight that holds the rest
# (TransformerEngine's FusedAdam ``store_param_remainders``; apex's DistributedFusedAdam likewise).
REMAINDER_BYTES = 2.0


class OptimizerPrecision(BaseModel):
    """The optimizer's formats one run asks for beyond its stack's profile (all off: the profile's)."""

    model_config = FROZEN

    # Megatron's --grad-reduce-in-bf16 (NeMo's and Megatron-Bridge's ``grad_reduce_in_fp32`` off, as
    # their FP8 performance recipes set it): the gradient buffer and its data-parallel reductions in
    # bf16, half the bytes of fp32 (megatron-core, megatron-lm).
    grad_reduce_bf16: bool = False
    # Megatron-Core's --use-precision-aware-optimizer (NeMo 2's bf16 performance recipes set it):
    # TransformerEngine's FusedAdam holds the master weights, and from TE 2.1 only their 16-bit
    # remainders (megatron/core/optimizer/__init__.py: ``store_param_remainders`` where
    # ``is_te_min_version("2.1.0.dev0")``): 2 bytes a parameter in the optimizer's shard, not 4
    # (megatron-core). Its moments stay fp32 (``exp_avg_dtype``'s default).
    param_remainders: bool = False

    def applied(self, s: ModelingSettings) -> ModelingSettings:
        """``s`` with the widths this run chose."""
        chosen = s.but(grad_bytes=BF16_BYTES) if self.grad_reduce_bf16 else s
        return chosen.but(master_param_bytes=REMAINDER_BYTES) if self.param_remainders else chosen

    def kept_under(self, stack: Stack) -> OptimizerPrecision:
        """The choices ``stack`` offers of these (a restacked plan keeps only those)."""
        return OptimizerPrecision(
            grad_reduce_bf16=self.grad_reduce_bf16 and stack.reduces_grads_in_bf16,
            param_remainders=self.param_remainders and stack.stores_param_remainders,
        )

    def words(self) -> str:
        """', bf16 gradients, master weights as remainders' for a summary line ('' when none)."""
        return (", bf16 gradients" if self.grad_reduce_bf16 else "") + (
            ", master weights as remainders" if self.param_remainders else ""
        )


DEFAULT_OPTIMIZER_PRECISION = OptimizerPrecision()

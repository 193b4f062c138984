"""The efficiency ceiling: no prediction beats the best MFU ever measured in its regime.

An ILP over hundreds of thousands of candidates finds every place where the model errs high (the
optimizer's curse). So a prediction is held at the best MFU (trainplan's: model FLOPs with causal
attention over the dense bf16 peak) measured on the same GPU architecture and precision class
(FP8 or 16-bit), for the same kind of model (dense or mixture-of-experts, whose MFU counts only
the active parameters and runs far lower), by a stack of the same family (PyTorch FSDP stacks, Megatron stacks:
planner/accuracy/regime.py), or by any stack when that family has no such row; with no measured
row on the architecture, nothing holds it (and the band says so). MFU, not hardware FLOPs: what
is bought is model work, and a plan that recomputes spends more FLOPs for the same MFU, so the
ceiling binds it later, never sooner. A job over more than one node (``Feature.MULTI_NODE``) is
held at what jobs of more than one node measured: an 8-GPU record (MPT-3B at 512 tokens, 64 % on A100)
says nothing of 2,048 GPUs.
A calibration file that measured the GPU lifts the ceiling for it (the user's own measurement
outranks the published ones; planner/accuracy/__init__.py). The point is held, not its band: about
one validation row in ten beat the ceiling its regime had without its source (bench/validate_bands.py
counts them), so the band's fast end may pass it (docs/validation.md, "The efficiency ceiling").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.accuracy.regime import NODE_GPUS, STACK_FAMILIES, Feature, Regime
from planner.accuracy.residuals import HeldOutRow


@dataclass(frozen=True)
class Ceiling:
    """The best measured MFU of a regime and the row that measured it."""

    mfu: float
    row: str
    source: str
    stack: str
    scope: str  # "family" (the regime's stack family) or "any stack"

    def describe(self) -> str:
        return f"{self.mfu:.1%} MFU, the best measured ({self.stack}, {self.source}: {self.row})"


class Ceilings:
    """The ceilings of every regime, from the rows given."""

    def __init__(self, rows: Sequence[HeldOutRow]) -> None:
        self.rows = tuple(rows)

    def ceiling(self, regime: Regime, exclude_source: str | None = None) -> Ceiling | None:
        """The best MFU measured in ``regime``'s architecture, precision class and scale."""
        fp8, moe = bool(regime.features & Feature.FP8), bool(regime.features & Feature.MOE)
        # Over more than one node, only rows over more than one node count.
        smallest = NODE_GPUS + 1 if regime.features & Feature.MULTI_NODE else 1
        pool = [
            r
            for r in self.rows
            if r.generation == regime.generation
            and (r.precision == "fp8") == fp8
            and r.moe == moe
            and r.num_gpus >= smallest
            and r.source != exclude_source
        ]
        family = [r for r in pool if STACK_FAMILIES.get(r.stack, r.stack) == regime.family]
        chosen, scope = (family, "family") if family else (pool, "any stack")
        if not chosen:
            return None
        best = max(chosen, key=lambda r: r.measured_mfu)
        return Ceiling(best.measured_mfu, best.name, best.source, best.stack, scope)

    def capped_error(self, row: HeldOutRow, regime: Regime) -> float:
        """The row's held-out error with its prediction held at the ceiling of its regime
        computed without its own source."""
        ceiling = self.ceiling(regime, exclude_source=row.source)
        predicted = row.predicted_mfu if ceiling is None else min(row.predicted_mfu, ceiling.mfu)
        return predicted / row.measured_mfu - 1.0

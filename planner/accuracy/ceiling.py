"""The efficiency ceiling: no prediction beats the best MFU ever measured in its regime.

An ILP over hundreds of thousands of candidates finds every place where the model errs high (the
optimizer's curse). So a prediction is held at the best MFU (trainplan's: model FLOPs with causal
attention over the dense bf16 peak) measured on the same GPU architecture and precision class
(FP8 or 16-bit), for the same kind of model (dense, or mixture-of-experts with fine-grained
experts, whose MFU counts only the active parameters and runs far lower; experts as wide as a
dense FFN run as dense: ``coarse_experts``), by a stack of the same family (PyTorch FSDP stacks, Megatron stacks:
planner/accuracy/regime.py), or by any stack when that family has no such row; with no measured
row on the architecture, nothing holds it (and the band says so). MFU, not hardware FLOPs: what
is bought is model work, and a plan that recomputes spends more FLOPs for the same MFU, so the
ceiling binds it later, never sooner. A job over more than one node (``Feature.MULTI_NODE``) is
held at what jobs of more than one node measured: an 8-GPU record (MPT-3B at 512 tokens, 64 % on A100)
says nothing of 2,048 GPUs.
A calibration file that measured the GPU's kernel rates lifts the ceiling for it, one that measured
a job only for that job's own shape (``judged_estimate``, planner/api/ceiling_estimate.py; the
user's own measurement outranks the published ones; planner/accuracy/__init__.py). The point is
held, not its band: about one validation row in ten beat the ceiling its regime had without its
source (bench/validate_bands.py counts them), so the band's fast end may pass it (docs/validation.md,
"The efficiency ceiling").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.accuracy.regime import NODE_GPUS, STACK_FAMILIES, Feature, Regime, feature_bits
from planner.accuracy.residuals import HeldOutRow

# Experts at least this many times the hidden width are each a dense model's FFN (Mixtral 8x7B:
# 14,336 / 4,096 = 3.5), whose GEMMs run as a dense layer's: NeMo's Mixtral rows on Blackwell
# measured 55-61 % MFU in FP8, dense-class, against 25-43 % for fine-grained experts (Qwen3 0.375,
# DeepSeek-V3 0.29, GPT-OSS 1.0 of the hidden width). Such a model is held at the dense ceiling
# (trial s27: Mixtral on H200 was held at a Qwen3-235B row's 27.9 %, about a third under Megatron
# -Core's published Mixtral throughput). A judgement from those rows' kinds, not a fit.
COARSE_EXPERT_RATIO = 2.0
# The features that split the model over GPUs: their collectives and bubbles are on the step, and
# a layout with them is held no higher than the best any stack measured with them.
MODEL_PARALLEL = Feature.TP | Feature.PP


def coarse_experts(model) -> bool:
    """Whether ``model`` (a ModelSpec) routes to experts as wide as a dense FFN."""
    return bool(model.is_moe) and model.ffn_hidden_size >= COARSE_EXPERT_RATIO * model.hidden_size


def ceiling_regime(regime: Regime, coarse: bool) -> Regime:
    """The regime whose ceiling holds a prediction: a coarse-expert model's is the dense one."""
    return Regime(regime.stack, regime.generation, regime.features & ~Feature.MOE) if coarse else regime


@dataclass(frozen=True)
class Ceiling:
    """The best measured MFU of a regime and the row that measured it."""

    mfu: float
    row: str
    source: str
    stack: str
    scope: str  # "family" (the regime's stack family) or "any stack"
    gpu: str = ""  # the GPU it ran on (trial s42: a B200 plan held at a GB200 NVL72 row, unsaid)
    # The best any stack measured with tp or pp, lower than the family's best (``MODEL_PARALLEL``).
    split: bool = False
    # The row's GPU count, and whether only rows over more than one node were looked at (the
    # regime's only "scale": buyer trial s50 L8, a 4,096-GPU 70B plan held at a 128-GPU 7B row read
    # as if the row were of its scale)
    num_gpus: int = 0
    multi_node: bool = False

    def describe(self) -> str:
        on = f" on {self.gpu}" if self.gpu else ""
        return f"{self.mfu:.1%} MFU, the best measured ({self.stack}, {self.source}: {self.row}{on})"


class Ceilings:
    """The ceilings of every regime, from the rows given."""

    def __init__(self, rows: Sequence[HeldOutRow]) -> None:
        self.rows = tuple(rows)
        # The rows that ran tp or pp, found once: asked per regime, the rule over every row's
        # Feature flags took 0.4 s of each process's first plan (s54 profile).
        self.split_rows = tuple(r for r in self.rows if _splits_model(r))
        # Each answer, kept: the rows are fixed, and a search asks the same few regimes for every
        # key of its tables (a 405B plan with its cap probes: ~1,300 asks, ~5 s of filtering rows).
        self._kept: dict[tuple[Regime, str | None], Ceiling | None] = {}

    def ceiling(self, regime: Regime, exclude_source: str | None = None) -> Ceiling | None:
        """The best MFU measured in ``regime``'s architecture, precision class, kind of model and
        stack family, over more than one node where the regime is: of any model size and GPU count."""
        key = (regime, exclude_source)
        if key not in self._kept:
            self._kept[key] = self._ceiling(regime, exclude_source)
        return self._kept[key]

    def _ceiling(self, regime: Regime, exclude_source: str | None) -> Ceiling | None:
        fp8, moe = bool(regime.features & Feature.FP8), bool(regime.features & Feature.MOE)
        # Over more than one node, only rows over more than one node count.
        smallest = NODE_GPUS + 1 if regime.features & Feature.MULTI_NODE else 1

        def in_regime(rows: Sequence[HeldOutRow]) -> list[HeldOutRow]:
            return [
                r
                for r in rows
                if r.generation == regime.generation
                and (r.precision == "fp8") == fp8
                and (r.moe and not r.coarse_experts) == moe
                and r.num_gpus >= smallest
                and r.source != exclude_source
            ]

        pool = in_regime(self.rows)
        family = [r for r in pool if STACK_FAMILIES.get(r.stack, r.stack) == regime.family]
        chosen, scope = (family, "family") if family else (pool, "any stack")
        if not chosen:
            return None
        best = max(chosen, key=lambda r: r.measured_mfu)
        # With tp or pp, no higher than the best any stack measured with tp or pp (trial s44 M1:
        # trainplan's 3D layouts, never measured, were held at a pure FSDP 7B row's 62.5 % on A100,
        # above every measured 3D run: Megatron-LM's 55.9 %); the lower of the two bounds holds.
        split = in_regime(self.split_rows) if regime.features & MODEL_PARALLEL else []
        nodes = smallest > 1
        if split and (best_split := max(split, key=lambda r: r.measured_mfu)).measured_mfu < best.measured_mfu:
            r = best_split
            return Ceiling(r.measured_mfu, r.name, r.source, r.stack, "any stack", r.gpu, True, r.num_gpus, nodes)
        return Ceiling(
            best.measured_mfu, best.name, best.source, best.stack, scope, best.gpu, False, best.num_gpus, nodes
        )

    def capped_error(self, row: HeldOutRow, regime: Regime) -> float:
        """The row's held-out error with its prediction held at the ceiling of its regime
        computed without its own source."""
        ceiling = self.ceiling(ceiling_regime(regime, row.coarse_experts), exclude_source=row.source)
        predicted = row.predicted_mfu if ceiling is None else min(row.predicted_mfu, ceiling.mfu)
        return predicted / row.measured_mfu - 1.0


def _splits_model(row: HeldOutRow) -> bool:
    """Whether a row ran tp or pp, by ``feature_bits``' rule (review s44 L5: restated here)."""
    return bool(int(feature_bits(row.tp, row.pp, 1, 0, False, False, 1)) & MODEL_PARALLEL)

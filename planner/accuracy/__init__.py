"""What the evidence says about a prediction: its regime, the error band read from the held-out
validation rows nearest it, whether it lies inside the validated envelope, and the efficiency
ceiling that no prediction may beat.

- ``regime.py``: the regime of a row or a candidate (stack, GPU architecture, layout features);
- ``residuals.py``: the held-out rows (``residuals.csv``, written by bench/validate_bands.py);
- ``bands.py``: the band's maths (quantiles of the nearest rows' log errors, widened outside the
  envelope);
- ``ceiling.py``: the best hardware FLOP utilisation measured per regime;
- ``links.py``: the parts whose scale-up link no well-measured part of their architecture has.

This module joins them for the API: the typed ``Uncertainty`` and ``EfficiencyCeiling`` of one
estimate, and the per-row ceilings and risk factors of a candidate table. It reads the model and
the catalog, never the search or the API.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum

import numpy as np

from planner.accuracy.bands import BAND_COVERAGE, BAND_QUANTILES, Evidence, EvidenceBase, shipped_base
from planner.accuracy.ceiling import Ceiling, ceiling_regime
from planner.accuracy.envelope import envelope_words, with_measured_job
from planner.accuracy.links import link_apart
from planner.accuracy.memory_band import memory_band
from planner.accuracy.regime import (
    FEATURE_SPAN,
    LONG_SEQUENCE_TOKENS,
    LONGEST_SEQUENCE_DOUBLINGS,
    NODE_GPUS,
    Feature,
    Regime,
    crosses_nodes,
    feature_bits,
    link_apart_label,
    long_sequence,
    run_feature_bits,
    zero3_shards_across_nodes,
)
from planner.accuracy.residuals import source_name
from planner.accuracy.unbanded import architecture_rows, architecture_words
from planner.accuracy.words import feature_names, few_rows_end, regime_words
from planner.catalog.hardware import GPUSpec, load_catalog
from planner.layout import Implementation, Layout, Precision, Sharding, TrainingConfig
from planner.model.candidates import IMPL_HF, PREC_FP8, SHARD_FSDP, Candidates
from planner.model.rowwise import once_per_table
from planner.model.settings import DEFAULT_SETTINGS
from planner.plan import Estimate
from planner.plan_accuracy import EfficiencyCeiling, MeasuredJobUse, MemoryBand, Uncertainty
from planner.units import GIB


class Risk(StrEnum):
    """Which quantile of the time to train the search minimises and constrains (``--risk``):
    the median, or the pessimistic 80th or 90th percentile of the held-out error band."""

    P50 = "p50"
    P80 = "p80"
    P90 = "p90"

    @property
    def quantile(self) -> float:
        return int(self.value[1:]) / 100

    @property
    def judges_memory(self) -> bool:
        """Whether a plan must fit at its reserved peak's band's high end too, not only at the
        model's figure (trial s42: at p90 the search chose a plan its own band said may not fit,
        beside one 3 % dearer that surely did)."""
        return self.quantile > 0.5


# The search judges plans at the pessimistic end of the band by default: a layout wins on
# evidence, not on the model's optimism (issue 26).
DEFAULT_RISK = Risk.P80


# A GPU whose balance of dense 16-bit FLOPs to HBM bytes lies more than this factor outside the
# range its architecture's measured GPUs span is judged as an architecture of its own: its
# memory-bound and communication shares differ so much that no measured row's MFU or error speaks
# for it. A choice; today it sets apart only the H20 (37 FLOP per byte, against 153-312 for every
# measured catalog GPU of any architecture).
BALANCE_SPAN = 2.0


def flops_per_byte(gpu: GPUSpec) -> float | None:
    """Dense 16-bit FLOPs per HBM byte (None: no 16-bit rate)."""
    peak = gpu.dense_16bit_flops_per_s
    return None if peak is None else peak / gpu.hbm_bandwidth_bytes_per_s


@functools.cache
def measured_balance() -> dict[str, tuple[float, float]]:
    """Each architecture's range of ``flops_per_byte`` over the catalog GPUs its validation rows
    ran on (a validation-only variant, such as torchtitan's 500 W H100, is not in the catalog)."""
    catalog = load_catalog()
    ratios: dict[str, list[float]] = {}
    for row in shipped_base().rows:
        gpu = catalog.gpus.get(row.gpu)
        ratio = None if gpu is None else flops_per_byte(gpu)
        if ratio is not None:
            ratios.setdefault(row.generation, []).append(ratio)
    return {generation: (min(r), max(r)) for generation, r in ratios.items()}


def regime_generation(gpu: GPUSpec) -> str:
    """The architecture a GPU's predictions are judged as (bands, envelope, ceiling): its own, or
    'Hopper (h20)' where its balance lies outside its architecture's measured range by more than
    BALANCE_SPAN (trial s28b: the H20 was held at an H100 row's MFU, 40 % under its own model,
    and its band read as validated by H100 rows)."""
    span, ratio = measured_balance().get(gpu.generation), flops_per_byte(gpu)
    if span is None or ratio is None or span[0] / BALANCE_SPAN <= ratio <= span[1] * BALANCE_SPAN:
        return gpu.generation
    return f"{gpu.generation} ({gpu.id})"


def band_generation(gpu: GPUSpec, multi_gpu) -> str:
    """The architecture a GPU's band and envelope are read as: ``regime_generation``'s, or its own
    part's where a job of more than one GPU crosses a link no well-measured part of its architecture
    has (planner/accuracy/links.py: the H800 at tp 8 read "validated" from H100 rows). Its
    efficiency ceiling stays ``regime_generation``'s: a slower link can only slow it."""
    generation = regime_generation(gpu)
    if generation == gpu.generation and bool(multi_gpu) and link_apart(gpu):
        return link_apart_label(gpu.generation, gpu.id)
    return generation


def regime_for(
    stack: str,
    gpu: GPUSpec,
    layout: Layout,
    training: TrainingConfig,
    moe: bool,
    named_kernel: str = "",
    gpus_per_node: int | None = None,
    scaleup_domain_size: int = NODE_GPUS,
    run_features: int = 0,
) -> Regime:
    """The regime of one configuration (``layout`` resolved; ``moe``: the model routes to experts;
    ``named_kernel``: the attention kernel the user named, "" for the stack's own; ``gpus_per_node``:
    the job's, default the whole job on one node; ``scaleup_domain_size``: its node's, ``crosses_nodes``;
    ``run_features``: the run's own choices' bits, ``run_feature_bits``)."""
    fp8, hf = training.precision == Precision.FP8, training.impl == Implementation.HF
    per_node = layout.world_size if gpus_per_node is None else gpus_per_node
    fsdp = layout.sharding == Sharding.FSDP
    zero3 = zero3_shards_across_nodes(stack, fsdp, layout.dp_shard, layout.tp, layout.cp, per_node)
    bits = feature_bits(
        layout.tp,
        layout.pp,
        layout.cp,
        training.seq_len,
        moe,
        fp8,
        layout.world_size,
        hf,
        training.offload,
        bool(named_kernel),
        zero3,
        crosses_nodes(layout.world_size, per_node, scaleup_domain_size),
        run_features,
    )
    generation = band_generation(gpu, layout.world_size > 1)
    return Regime(stack, generation, int(bits), int(long_sequence(training.seq_len)), named_kernel)


def ceiling_of(regime: Regime, gpu: GPUSpec, calibrated: bool) -> Ceiling | None:
    """The efficiency ceiling of ``regime`` on ``gpu``'s architecture (``regime_generation``: a part
    judged apart only for its link keeps its architecture's); none where a calibration file
    measured the GPU."""
    if calibrated:
        return None
    return shipped_base().ceilings.ceiling(replace(regime, generation=regime_generation(gpu)))


def _row_keys(c: Candidates, moe: bool, stack: str, named_kernel: str = "", run_features: int = 0) -> np.ndarray:
    """A key per row: its GPU and feature bits (the regime, for ``stack``); kept for the
    last table (its ceilings and each quantile pass ask for them)."""
    term = f"regime_keys_{stack}_{named_kernel}_{run_features}"  # ``other`` is kept by identity
    return once_per_table(term, c, moe, lambda: _regime_keys(c, moe, stack, named_kernel, run_features))


# A regime key: ((GPU index x SEQUENCE_KEYS) + the long sequence's doublings + 1, or 0 for a
# short one) x FEATURE_SPAN + the feature bits.
SEQUENCE_KEYS = LONGEST_SEQUENCE_DOUBLINGS + 2


def _regime_keys(c: Candidates, moe: bool, stack: str, named_kernel: str, run_features: int = 0) -> np.ndarray:
    fp8, hf, kernel = c.precision == PREC_FP8, c.impl == IMPL_HF, bool(named_kernel)
    zero3 = zero3_shards_across_nodes(stack, c.sharding == SHARD_FSDP, c.dp_shard, c.tp, c.cp, c.gpus_per_node)
    multi_node = crosses_nodes(c.num_gpus, c.gpus_per_node, c.scaleup_domain_size)
    facts = (c.tp, c.pp, c.cp, c.seq_len, moe, fp8, c.num_gpus, hf, c.offload.astype(bool), kernel, zero3)
    bits = feature_bits(*facts, multi_node, run_features)
    long = long_sequence(c.seq_len)
    octave = np.where(long > 0, np.log2(np.maximum(long, 1) / LONG_SEQUENCE_TOKENS) + 1, 0).astype(np.int64)
    return (np.asarray(c.gpu_index, dtype=np.int64) * SEQUENCE_KEYS + octave) * FEATURE_SPAN + bits


def _key_parts(key: int) -> tuple[int, int, int]:
    """A regime key's GPU index, feature bits and long sequence (``_regime_keys``)."""
    rest, bits = divmod(key, FEATURE_SPAN)
    g, octave = divmod(rest, SEQUENCE_KEYS)
    return g, bits, 0 if octave == 0 else LONG_SEQUENCE_TOKENS * 2 ** (octave - 1)


def _distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct keys, ascending (small non-negative ints: a count per key, not a sort of a
    million rows)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.bincount(keys))


def _per_key(keys: np.ndarray, values) -> np.ndarray:
    """``values(gpu_index, bits, seq_len)`` (a sequence) for each distinct key (``_key_parts``),
    spread over the rows: one column per value."""
    unique = _distinct(keys)
    parts = (_key_parts(int(k)) for k in unique)
    table = np.array([values(*p) for p in parts], dtype=float).reshape(len(unique), -1)
    return table[np.searchsorted(unique, keys)]


def mfu_ceilings(
    c: Candidates,
    gpus: Sequence[GPUSpec],
    stack: str,
    moe: bool,
    calibrated: frozenset[str] = frozenset(),
    named_kernel: str = "",
    coarse: bool = False,
    run_features: int = 0,
) -> np.ndarray:
    """Each row's efficiency ceiling (NaN: none), by its regime (its scale among its features);
    ``coarse``: the model's experts are as wide as a dense FFN (``ceiling_regime``)."""

    def value(g: int, bits: int, _seq: int) -> tuple[float]:  # no ceiling reads the sequence
        gpu = gpus[g]
        regime = ceiling_regime(Regime(stack, regime_generation(gpu), bits), coarse)
        ceiling = ceiling_of(regime, gpu, gpu.id in calibrated)
        return (np.nan if ceiling is None else ceiling.mfu,)

    return _per_key(_row_keys(c, moe, stack, named_kernel, run_features), value)[:, 0]


@functools.lru_cache(maxsize=4096)  # thread-safe; a plan and its median re-solve ask the same regimes
def regime_time_factors(base: EvidenceBase, regime: Regime, quantiles: tuple[float, ...]) -> tuple[float, ...]:
    """The quantiles of measured / predicted time of ``base``'s evidence nearest ``regime`` (keyed
    by the base: bench/validate_bands.py reloads the shipped one)."""
    evidence = base.evidence(regime)
    return tuple(evidence.time_factor(q) for q in quantiles)


def time_factors(
    c: Candidates,
    gpus: Sequence[GPUSpec],
    stack: str,
    moe: bool,
    quantiles: Sequence[float],
    named_kernel: str = "",
    run_features: int = 0,
) -> list[np.ndarray]:
    """Each row's quantiles of measured / predicted time (planner/accuracy/bands.py), one array
    per quantile (``Risk.quantile``, ``BAND_QUANTILES``)."""
    base = shipped_base()

    def factors(g: int, bits: int, seq: int) -> tuple[float, ...]:
        generation = band_generation(gpus[g], bits & Feature.MULTI_GPU)
        return regime_time_factors(base, Regime(stack, generation, bits, seq, named_kernel), tuple(quantiles))

    table = _per_key(_row_keys(c, moe, stack, named_kernel, run_features), factors)
    return [table[:, i] for i in range(len(quantiles))]


def _pair(value: float | None, lo: float, hi: float) -> tuple[float, float] | None:
    return None if value is None else (value * lo, value * hi)


def _at_risk(value: float | None, ev: Evidence) -> dict[str, float] | None:
    """``value`` (a time or a cost) at each risk quantile."""
    return None if value is None else {r.value: value * ev.time_factor(r.quantile) for r in Risk}


def _cost_pair(e: Estimate, lo: float, hi: float) -> tuple[float, float] | None:
    """The cost at the time band's ends: the same GPUs held that long (``Estimate.cost_at_hours``:
    under a reserved term the whole term's, whatever the time)."""
    hours = e.time_to_train_h
    low, high = (None, None) if hours is None else (e.cost_at_hours(hours * lo), e.cost_at_hours(hours * hi))
    return None if low is None or high is None else (low, high)


def _cost_at_risk(e: Estimate, ev: Evidence) -> dict[str, float] | None:
    """The cost at each risk quantile's time to train (as ``_cost_pair``)."""
    hours = e.time_to_train_h
    costs = {} if hours is None else {r.value: e.cost_at_hours(hours * ev.time_factor(r.quantile)) for r in Risk}
    return {r: c for r, c in costs.items() if c is not None} or None


def uncertainty(
    estimate: Estimate, regime: Regime, ceiling: Ceiling | None = None, job: MeasuredJobUse | None = None
) -> Uncertainty:
    """The 80 % band of every predicted figure and the time to train at each risk quantile
    (``ceiling``: the efficiency ceiling the estimate was held at, if any; ``job``: the user's
    measured job that corrects this GPU, if any)."""
    ev = shipped_base().evidence(regime)
    held = estimate.time.breakdown_s.efficiency_ceiling > 0
    circular = ceiling is not None and held and ev.validated and set(ev.exact_sources) == {ceiling.source}
    lo, hi = (ev.time_factor(q) for q in BAND_QUANTILES)
    # Time factors beside 1 on one side: the rows nearest the regime all erred the same way.
    outside = "slower" if lo > 1.0 else "faster" if hi < 1.0 else None
    tokens = estimate.throughput.tokens_per_s
    hours = estimate.time_to_train_h
    # rows of its own architecture kept out of the bands: cited where the band is others' (trial s48 M3)
    own_rows = None if ev.validated else architecture_rows(regime.generation)
    return Uncertainty(
        coverage=BAND_COVERAGE,
        tokens_per_s=(tokens / hi, tokens / lo),
        step_s=(estimate.time.step_s * lo, estimate.time.step_s * hi),
        time_to_train_h=_pair(hours, lo, hi),
        cost_usd=_cost_pair(estimate, lo, hi),
        energy_kwh=_pair(estimate.energy_kwh, lo, hi),
        mfu=(estimate.throughput.mfu / hi, estimate.throughput.mfu / lo),
        time_to_train_h_at_risk=_at_risk(hours, ev),
        cost_usd_at_risk=_cost_at_risk(estimate, ev),
        validated=ev.validated,
        regime=regime.describe(),
        regime_stack=regime.stack,
        regime_generation=regime.generation,
        regime_features=feature_names(regime.features),
        regime_kernel=regime.kernel,
        rows=len(ev.rows),
        exact_rows=ev.exact_rows,
        sources=ev.sources,
        row_names=tuple(f"{source_name(r.source)}: {r.name}" for r in ev.rows),
        mean_abs_error=ev.mean_abs_error,
        median_abs_error=ev.median_abs_error,
        widened_by=ev.widened_by,
        envelope=with_measured_job(
            envelope_words(ev, circular, estimate.layout.seq_len) + architecture_words(own_rows), job
        ),
        architecture_rows=own_rows,
        measured_job=job,
        memory=_memory_band(estimate, regime),
        few_rows_end=few_rows_end(ev, {r.value: r.quantile for r in Risk}),
        circular=circular,
        exact_sources=ev.exact_sources,
        point_outside=outside,
        reaches=tuple(regime_words(r) for r in ev.setting_neighbours),
        nearest=None if ev.validated or not ev.rows else regime_words(ev.nearest_regime()),
        # the sequence asked for (its regime keeps it rounded up to a whole doubling)
        sequence_tokens=estimate.layout.seq_len if ev.sequence_doublings else None,
        longest_measured_tokens=ev.longest_measured if ev.sequence_doublings else None,
        sequence_doublings=ev.sequence_doublings,
        basis=(
            f"{BAND_COVERAGE:.0%} band: 10th-90th percentile of the held-out tokens/s errors of the {len(ev.rows)}"
            " validation rows nearest this regime (docs/validation.md, 'Error bands')"
        ),
    )


def _memory_band(estimate: Estimate, regime: Regime) -> MemoryBand | None:
    """The band of the estimate's reserved peak, against what the fit rule leaves it (the usable
    memory less the CUDA context; review s38: the context was left out, so a plan the rule refuses
    could read "fits") and the GPU's room (its capacity less the context), widened for the run choices
    of its regime that no measured peak ran (review55 M3: pure bf16)."""
    m = estimate.memory
    context = DEFAULT_SETTINGS.cuda_context_bytes / GIB
    hf, multi = bool(regime.features & Feature.HF_MODULES), bool(regime.features & Feature.MULTI_GPU)
    usable, room = m.usable_gib - context, m.capacity_gib - context
    return memory_band(m.reserved_gib, usable, room, regime.stack, hf, multi, features=regime.features)


def efficiency_ceiling(ceiling: Ceiling | None, estimate: Estimate, lifted: bool = False) -> EfficiencyCeiling | None:
    """The record of the ceiling an estimate was held at (None: no ceiling applied); what the
    model predicted before it is the step without its ``efficiency_ceiling`` term. ``lifted``: the
    ceiling the estimate's regime has but a calibration file's kernel rates lifted (not applied)."""
    if ceiling is None:
        return None
    held = estimate.time.breakdown_s.efficiency_ceiling
    return EfficiencyCeiling(
        mfu=ceiling.mfu,
        row=ceiling.row,
        source=ceiling.source,
        stack=ceiling.stack,
        gpu=ceiling.gpu or None,
        split=ceiling.split,
        num_gpus=ceiling.num_gpus or None,
        multi_node=ceiling.multi_node,
        binding=held > 0,
        uncapped_tokens_per_s=estimate.global_batch_tokens / (estimate.time.step_s - held),
        lifted=lifted,
    )


__all__ = [
    "DEFAULT_RISK",
    "Feature",
    "Regime",
    "Risk",
    "ceiling_of",
    "efficiency_ceiling",
    "mfu_ceilings",
    "regime_for",
    "run_feature_bits",
    "time_factors",
    "uncertainty",
]

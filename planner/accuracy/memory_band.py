"""The 80 % band of a plan's reserved memory peak, from measured peaks no setting was fitted on.

A plan is chosen at the memory model's own figure plus 5 % headroom, and the search lands many at
94-99 % of what a GPU allows (trial s38), where the memory model has missed by up to 25 % on the
peaks that were measured (docs/validation.md, "Memory of torchtitan's rows"). So every figure of
memory carries a band too:

- rows (``memory_residuals.csv``, written by bench/validate_bands.py --write from
  validation/memory_residuals.py): torchtitan's 13 and torchao's 2 reserved peaks (the caching allocator's,
  as its logs print them), trainplan's 9 H200 runs' allocated peaks (their reserved figures are
  not used: two fractions of the reserved model were fitted on them; the allocated model has no
  fitted term but a 96 MiB constant) and Megatron-LM's CI reference values, two 7B cases on H100,
  A100 and GB200 (allocated peaks of the last rank; validation/megatron_memory.py);
- grouping: a plan reads the rows of its own stack, modules (Hugging Face's or the stack's) and
  scale (one GPU, or more) where they hold at least ``MIN_MEMORY_ROWS`` configurations; else
  every row, pooled, and says that no peak of its kind was measured (or too few);
- band: the 10th and 90th percentiles of measured / predicted over those rows (the time band's
  ``BAND_QUANTILES``), each end widened in quadrature by what a new source adds (the spread of the
  sources' mean errors, as the time band's, at Student's t for so few sources), times the plan's reserved peak; ``may_not_fit`` where
  the high end passes what the fit rule leaves the reserved peak (``may_fit`` where the low end
  is under it for a plan judged not to fit).

Held out (leave one source out, torchao's rows with torchtitan's: the same software) 26 of 26
peaks lie in their band; 54 % while a new source's offset was the normal quantile of the sources'
spread: with three sources agreeing within 5 %, a band read from two of them was narrow and the
H200 runs, predicted within 1 %, fell just under it. The offset is now the prediction interval of
one more source from so few (``new_source_quantile``; docs/validation.md). The band says how far
the sources disagree, and how little a few of them say.

Nothing here changes which plans fit: the fit rule stays the model's figure (a band read from
thirteen rows of one stack would drop most large plans); the band says how sure that figure is.
"""

from __future__ import annotations

import csv
import functools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.accuracy.bands import BAND_QUANTILES, extrapolation_sigma, widening, z
from planner.accuracy.new_source import new_source_quantile
from planner.accuracy.regime import FEATURE_WEIGHTS, FEATURE_WORDS, Feature
from planner.accuracy.residuals import source_name
from planner.plan_accuracy import MemoryBand

MEMORY_RESIDUALS_CSV = Path(__file__).resolve().parent / "memory_residuals.csv"
# Fewer rows than this of a plan's kind read every row instead: a band of two rows is their two
# errors, not a spread. A choice, like bands.MIN_ROWS.
MIN_MEMORY_ROWS = 5
# A run's choices that no measured peak ran: every row above is mixed precision (an fp32 master beside
# bf16 compute), so a pure-bf16 plan's states are a byte count no peak checked (review55 M3: its band read
# "from all 26 measured peaks" and said nothing; the byte count had missed FSDP2's copy, 15 GiB, review55 H).
# Each widens the band as a feature a time band's rows lack widens it (``FEATURE_WEIGHTS`` units of
# ``bands.extrapolation_sigma``), and is named beside it.
UNMEASURED_MEMORY_FEATURES = (Feature.PURE_BF16,)


@dataclass(frozen=True)
class MemoryRow:
    """One measured peak: where it came from, the kind of plan it places, and measured vs predicted."""

    source: str
    name: str
    stack: str
    hf_modules: bool
    gpu: str
    num_gpus: int
    figure: str  # "reserved" (the caching allocator's peak) or "allocated"
    measured_gib: float
    predicted_gib: float

    @property
    def ratio(self) -> float:
        return self.measured_gib / self.predicted_gib

    def kind(self) -> tuple[str, bool, bool]:
        return (self.stack, self.hf_modules, self.num_gpus > 1)


MEMORY_COLUMNS = tuple(MemoryRow.__dataclass_fields__)


def _row(record: dict[str, str]) -> MemoryRow:
    return MemoryRow(
        source=record["source"],
        name=record["name"],
        stack=record["stack"],
        hf_modules=record["hf_modules"] == "1",
        gpu=record["gpu"],
        num_gpus=int(record["num_gpus"]),
        figure=record["figure"],
        measured_gib=float(record["measured_gib"]),
        predicted_gib=float(record["predicted_gib"]),
    )


@functools.cache
def load_memory_rows(path: Path = MEMORY_RESIDUALS_CSV) -> tuple[MemoryRow, ...]:
    with path.open(newline="", encoding="utf-8") as f:
        return tuple(_row(r) for r in csv.DictReader(f))


def kind_rows(rows: tuple[MemoryRow, ...], stack: str, hf_modules: bool, multi_gpu: bool) -> tuple[MemoryRow, ...]:
    """The rows of one kind of plan (``MemoryRow.kind``)."""
    return tuple(r for r in rows if r.kind() == (stack, hf_modules, multi_gpu))


def configurations(rows: tuple[MemoryRow, ...]) -> int:
    """How many configurations ``rows`` measured: one measured on several GPUs counts once
    (Megatron-LM's two CI cases on three GPUs are two)."""
    return len({(r.source, r.name) for r in rows})


def evidence_rows(
    rows: tuple[MemoryRow, ...], stack: str, hf_modules: bool, multi_gpu: bool
) -> tuple[tuple[MemoryRow, ...], bool]:
    """(the rows a plan of this kind reads, whether they are its own kind's): its own where they
    hold ``MIN_MEMORY_ROWS`` configurations."""
    own = kind_rows(rows, stack, hf_modules, multi_gpu)
    return (own, True) if configurations(own) >= MIN_MEMORY_ROWS else (rows, False)


def source_sigma(rows: tuple[MemoryRow, ...]) -> float:
    """The standard deviation of the sources' mean log(measured / predicted): what a new source
    adds to the rows' own spread (as the time band's ``bands.source_sigma``; 0 with one source)."""
    means = _source_means(rows)
    return float(np.std(means, ddof=1)) if len(means) >= 2 else 0.0


def _source_means(rows: tuple[MemoryRow, ...]) -> list[float]:
    by_source: dict[str, list[float]] = {}
    for r in rows:
        by_source.setdefault(r.source, []).append(float(np.log(r.ratio)))
    return [float(np.mean(v)) for v in by_source.values()]


def unmeasured_features(features: int) -> tuple[Feature, ...]:
    """The features of ``features`` (a plan's regime bits) that no measured peak ran."""
    return tuple(f for f in UNMEASURED_MEMORY_FEATURES if int(features) & f)


def unmeasured_distance(features: int) -> float:
    """How far past the measured peaks a plan lies: its unmeasured features' ``FEATURE_WEIGHTS``."""
    return sum(FEATURE_WEIGHTS[f] for f in unmeasured_features(features))


def ratio_band(
    rows: tuple[MemoryRow, ...], offset_rows: tuple[MemoryRow, ...], distance: float = 0.0
) -> tuple[float, float]:
    """The 10th and 90th percentiles of measured / predicted over ``rows``, each end widened in
    quadrature (log units, as the time band's ``log_quantile``) by where a new source's offset may
    lie, from the sources of ``offset_rows``: their means' standard deviation times the
    prediction-interval quantile of so few of them (``new_source_quantile``: t with k - 1 degrees
    of freedom; the normal's z until session 42, when three sources' held-out coverage read 54 %),
    and by ``distance`` units past what they measured (``unmeasured_distance``), as the time band's."""
    logs = np.log([r.ratio for r in rows])
    m = float(np.median(logs))
    sigma, sources = source_sigma(offset_rows), len(_source_means(offset_rows))
    ends = []
    for q in BAND_QUANTILES:
        spread = float(np.quantile(logs, q)) - m
        width = np.hypot(spread, sigma * new_source_quantile(q, sources))
        if distance:
            width = np.hypot(width, extrapolation_sigma(distance) * z(q))
        ends.append(float(np.exp(m + np.sign(z(q)) * width)))
    return ends[0], ends[1]


def passes_room(reserved, high, room):
    """Whether a reserved peak's band (its high end, measured / predicted) passes the GPU's own
    room (its memory less the CUDA context): a plan's ``may_not_fit``, and the search's tie key
    (planner/search/score.py). Any units, alike on both sides; arrays broadcast."""
    return reserved * high > room


def band_ratios(
    stack: str, hf_modules: bool, multi_gpu: bool, rows: tuple[MemoryRow, ...] | None = None, features: int = 0
) -> tuple[float, float]:
    """The band's ends as measured / predicted for a plan of this kind (``ratio_band`` of its
    ``evidence_rows``, widened for its ``unmeasured_features``); (1, 1) with no measured peak at all."""
    rows = load_memory_rows() if rows is None else rows
    if not rows:
        return 1.0, 1.0
    used, _ = evidence_rows(rows, stack, hf_modules, multi_gpu)
    return ratio_band(used, rows, unmeasured_distance(features))


def memory_band(
    reserved_gib: float,
    usable_gib: float,
    room_gib: float,
    stack: str,
    hf_modules: bool,
    multi_gpu: bool,
    rows: tuple[MemoryRow, ...] | None = None,
    features: int = 0,
) -> MemoryBand | None:
    """The band of a plan's reserved peak (None: no measured peak at all), against what the fit
    rule leaves it (``usable_gib``) and the GPU's own room (``room_gib``; ``MemoryBand``); ``features``:
    the plan's regime bits, of which the ``unmeasured_features`` widen it and are named."""
    rows = load_memory_rows() if rows is None else rows
    if not rows:
        return None
    used, own = evidence_rows(rows, stack, hf_modules, multi_gpu)
    low, high = band_ratios(stack, hf_modules, multi_gpu, rows, features)
    unmeasured = unmeasured_features(features)
    few = () if own else kind_rows(rows, stack, hf_modules, multi_gpu)
    errors = [abs(1.0 / r.ratio - 1.0) for r in used]  # predicted / measured - 1, as the tables print it
    fits = reserved_gib <= usable_gib
    counts = Counter(r.stack for r in used)
    return MemoryBand(
        reserved_gib=(reserved_gib * low, reserved_gib * high),
        usable_gib=usable_gib,
        room_gib=room_gib,
        may_not_fit=fits and bool(passes_room(reserved_gib, high, room_gib)),
        may_fit=not fits and reserved_gib * low <= usable_gib,
        validated=own and not unmeasured,
        own_kind=own,
        unmeasured_features=tuple(str(f.name).lower() for f in unmeasured),
        widened_by=widening(unmeasured_distance(features)),
        rows=len(used),
        sources=tuple(sorted({source_name(r.source) for r in used})),
        stacks=tuple(f"{name} {n}" for name, n in sorted(counts.items())),
        mean_abs_error=float(np.mean(errors)),
        kind=_kind_words(stack, hf_modules, multi_gpu),
        stack=stack,
        hf_modules=hf_modules,
        multi_gpu=multi_gpu,
        own_configurations=configurations(few),
        own_ratio=(min(r.ratio for r in few), max(r.ratio for r in few)) if few else None,
    )


def _own_words(band: MemoryBand) -> str:
    """'no measured peak of megatron-core, more than one GPU', or how few there are and how they ran."""
    if not band.own_configurations or band.own_ratio is None:
        return f"no measured peak of {band.kind}"
    low, high = (ratio - 1.0 for ratio in band.own_ratio)
    return (
        f"only {band.own_configurations} configuration(s) of {band.kind} measured, too few for a band of their"
        f" own ({MIN_MEMORY_ROWS} needed; they ran {low:+.0%} to {high:+.0%} against the model)"
    )


def _kind_words(stack: str, hf_modules: bool, multi_gpu: bool) -> str:
    """'torchtitan, more than one GPU' / 'trainplan with Hugging Face modules, one GPU'."""
    modules = " with Hugging Face modules" if hf_modules else ""
    return f"{stack}{modules}, {'more than one GPU' if multi_gpu else 'one GPU'}"


def memory_words(band: MemoryBand) -> str:
    """The CLI's line: '80 % band of the reserved peak 62.3-78.5 GiB, from 13 measured peaks of
    torchtitan, more than one GPU (mean |error| 19.1%); its high end passes the 78.7 GiB the GPU
    holds beside the CUDA context: it may not fit'."""
    low, high = band.reserved_gib
    figures = f"80 % band of the reserved peak {low:.1f}-{high:.1f} GiB"
    error = f"mean |error| {band.mean_abs_error:.1%}"
    if band.from_own_kind:
        text = f"{figures}, from {band.rows} measured peaks of {band.kind} ({error})"
    else:
        read = ", ".join(band.stacks)
        text = f"{figures}: {_own_words(band)}; read from all {band.rows} measured peaks ({read}), {error}"
    if band.unmeasured_features:
        said = ", ".join(FEATURE_WORDS[Feature[name.upper()]] for name in band.unmeasured_features)
        text += f"; no measured peak ran {said}: band widened by {band.widened_by:.0%}"
    if band.may_not_fit:
        room = band.usable_gib if band.room_gib is None else band.room_gib
        text += f"; its high end passes the {room:.1f} GiB the GPU holds beside the CUDA context: it may not fit"
    if band.may_fit:
        text += f"; its low end is under the {band.usable_gib:.1f} GiB the fit rule leaves it: it may fit"
    return text

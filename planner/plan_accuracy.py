"""How far the truth may lie from an estimate's figures, as the plan carries it: the 80 % bands,
where the estimate stands against the validated envelope, and the efficiency ceiling it was held at
(computed in planner/accuracy; split out of planner/plan.py, which holds them as fields)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel

from planner.frozen import FROZEN


class RegimeWords(BaseModel):
    """A regime as its parts (planner/accuracy/regime.py): the stack, the GPU architecture and the
    layout features' names, lower case, so each interface words it in its own language."""

    model_config = FROZEN
    stack: str
    generation: str
    features: tuple[str, ...] = ()
    kernel: str = ""  # the attention kernel where its stack would not pick it (``Regime.kernel``)


class Standing(StrEnum):
    """Where an estimate stands against the validated envelope, in one word per interface: a
    measured row of its regime checks it (``VALIDATED``), the regime's rows also set the ceiling it
    is held at, so it repeats them (``CIRCULAR``: trial s31, review s32), or no row of its regime
    was measured (``OUTSIDE``)."""

    VALIDATED = "validated"
    CIRCULAR = "not independent"
    OUTSIDE = "outside"


class MeasuredJobUse(BaseModel):
    """The user's own measured job a calibration file corrects this GPU with (planner/catalog/
    measured_job.py), and whether the estimate is that job's very shape (``exact``: its figures are
    the job's measurement, the efficiency ceiling lifted for it) or another (the corrections are
    extrapolated, the ceiling kept: trial s38, a 124M 1-GPU job had lifted it for a 256-GPU 8B)."""

    model_config = FROZEN
    name: str
    shape: str
    date: str
    exact: bool
    compute_time_factor: float
    memory_factor: float


class MemoryBand(BaseModel):
    """The 80 % band of the reserved memory peak (planner/accuracy/memory_band.py): read from the
    measured peaks of the plan's kind (``own_kind``; ``validated`` where no choice of the run is one no
    peak measured) or, where fewer were measured, from every one. ``may_not_fit``: the figure passes the fit rule, but the band's high end passes the
    GPU's memory itself (``room_gib``: capacity less the CUDA context): it may run out of memory.
    The rule's headroom is a margin of its own, so the band is not held against it as well (review
    s39: measured against the rule's limit, following the card's advice moved the limit and the
    warning came back at every step). ``may_fit``: the figure fails the rule, but the band's low
    end passes what the rule leaves the reserved peak (``usable_gib``: the usable memory less the
    CUDA context)."""

    model_config = FROZEN
    reserved_gib: tuple[float, float]
    usable_gib: float
    may_not_fit: bool  # the figure passes the rule, the band's high end passes the GPU's room
    may_fit: bool  # the figure does not pass the rule, the band's low end does
    room_gib: float | None = None  # capacity less the CUDA context (None: plan files before s39)
    validated: bool
    rows: int
    sources: tuple[str, ...]
    stacks: tuple[str, ...]  # the stacks of the rows read, each with its count: "torchtitan 13"
    mean_abs_error: float
    kind: str  # the plan's kind in words: "torchtitan, more than one GPU"
    stack: str = ""  # and its parts, for interfaces in other languages
    hf_modules: bool = False
    multi_gpu: bool = False
    # Where its own kind's peaks are too few for a band of their own (not ``validated``): how many
    # configurations were measured, and their measured / predicted range (trial s40: "no measured
    # peak of megatron-core" beside "megatron-core 6", two configurations that ran 4-11 % over).
    own_configurations: int = 0
    own_ratio: tuple[float, float] | None = None
    # Read from its own kind's peaks (None: plan files before bf16rest56, whose ``validated`` said it).
    # ``validated`` is that, and no run choice of it unmeasured: ``unmeasured_features`` (Feature names,
    # lower case: "pure_bf16"), the choices no measured peak ran, which widen the band by ``widened_by``
    # at its high end as a feature its rows lack widens the time band (planner/accuracy/memory_band.py).
    own_kind: bool | None = None
    unmeasured_features: tuple[str, ...] = ()
    widened_by: float = 0.0

    @property
    def from_own_kind(self) -> bool:
        """Whether the band was read from its own kind's measured peaks (``own_kind``)."""
        return self.validated if self.own_kind is None else self.own_kind


class FewRowsEnd(BaseModel):
    """The pessimistic risk quantiles (p80, p90) that are all the farthest of one regime's few
    measured rows (fewer than planner/accuracy/bands.py MIN_ROWS: ``Evidence.few_rows_setting``),
    not a quantile of a spread of rows, so they coincide (buyer trial s48 M2: p80 = p90, +133 %,
    set by two of three rows; planner/accuracy/words.py ``few_rows_end``)."""

    model_config = FROZEN
    risks: tuple[str, ...]  # "p80", "p90": the ones so set, two or more
    regime: str  # the regime of those rows, in words (the plan's own or a neighbour's)
    regime_parts: RegimeWords  # the same, for interfaces in other languages
    errors: tuple[float, ...]  # each row's error (predicted / measured - 1), ascending


class ArchitectureRows(BaseModel):
    """Rows measured on the estimate's own GPU architecture that are scored held out but are not
    band rows (too few, one source each: docs/validation.md "AMD Instinct"), cited beside the band
    read from other architectures (buyer trial s48 M3: an MI325X plan won on a band of Hopper rows
    with its own architecture's rows unsaid). planner/accuracy/unbanded.py."""

    model_config = FROZEN
    generation: str  # "CDNA3"
    rows: int
    sources: tuple[str, ...]
    errors: tuple[float, ...]  # each row's held-out tokens/s error (predicted / measured - 1), ascending

    @property
    def mean_error(self) -> float:
        return sum(self.errors) / len(self.errors)


class Uncertainty(BaseModel):
    """How far the truth may lie from the figures (planner/accuracy): each pair is the 80 % band
    (``coverage``), read from the held-out errors of the validation rows nearest the estimate's
    regime; ``time_to_train_h_at_risk`` the time at the median and the pessimistic quantiles the
    search can judge by (``--risk``). ``validated``: a measured row of the same regime exists;
    ``envelope`` says which, or how far outside it lies and how much the band was widened."""

    model_config = FROZEN
    coverage: float
    tokens_per_s: tuple[float, float]
    step_s: tuple[float, float]
    time_to_train_h: tuple[float, float] | None = None
    cost_usd: tuple[float, float] | None = None
    energy_kwh: tuple[float, float] | None = None
    # MFU is tokens/s x FLOPs per token / peak: tokens/s's band (review s35: only the app's card had one)
    mfu: tuple[float, float] | None = None
    time_to_train_h_at_risk: dict[str, float] | None = None
    cost_usd_at_risk: dict[str, float] | None = None
    validated: bool
    regime: str  # in words
    regime_stack: str = ""
    regime_generation: str = ""
    regime_features: tuple[str, ...] = ()  # planner/accuracy/regime.py Feature names, lower case
    regime_kernel: str = ""  # its attention kernel where its stack would not pick it (``Regime.kernel``)
    rows: int  # validation rows the band is read from
    exact_rows: int  # of them, rows of this very regime
    sources: tuple[str, ...]
    mean_abs_error: float  # of those rows
    # of those rows, each moved to its own held-out band's median: which figure erred less where
    # this band is read (the headline keeps the model's; trial s48 H2). None: not recorded.
    median_abs_error: float | None = None
    widened_by: float  # the extrapolation term at the band's upper end (0 inside the envelope)
    envelope: str
    basis: str
    # The regime's measured rows also set the efficiency ceiling the estimate is held at: the
    # figure repeats them (trial s31: DeepSeek-V3's one row read as an independent check).
    circular: bool = False
    exact_sources: tuple[str, ...] = ()  # the sources of the exact_rows (``sources`` are the band's)
    # Where the nearest rows all ran slower (or all faster) than predicted, the band lies wholly
    # beside the model's own figure: "slower" / "faster" says which side the truth is expected on.
    point_outside: str | None = None
    # Outside the envelope: the measured regimes whose band reaches past this one's own at an end,
    # so that end is theirs (planner/accuracy/bands.py ``setting_neighbours``; the app's card said
    # nothing of them, the CLI's envelope sentence did).
    reaches: tuple[RegimeWords, ...] = ()
    # outside the envelope, the regime of the rows nearest it (trial s42: the app did not say a
    # B200 trainplan plan's band was Megatron-Core's on GB200, as the CLI's envelope line does)
    nearest: RegimeWords | None = None
    # A long sequence past the longest one its band's rows measured (trial s37): the sequence (in
    # whole doublings of 32K), that longest and the doublings between, each widening the band as
    # a differing feature does (``widened_by`` counts them). None / 0: within what was measured.
    sequence_tokens: int | None = None
    longest_measured_tokens: int | None = None
    sequence_doublings: float = 0.0
    # The validation rows the band is read from: "source: name" (planner/accuracy/residuals.csv)
    # (trial s37: only their sources were named, so a practitioner could not check the regime).
    row_names: tuple[str, ...] = ()
    # The user's measured job behind a calibration file's corrections on this GPU (None: none).
    measured_job: MeasuredJobUse | None = None
    # The band of the reserved memory peak (trial s38: plans at 94-99 % of a GPU had none).
    memory: MemoryBand | None = None
    # the architecture's own rows that are not band rows (AMD Instinct), beside the band (None: none)
    architecture_rows: ArchitectureRows | None = None
    few_rows_end: FewRowsEnd | None = None  # p80 / p90 set by a regime's few rows (None: by a spread)

    @property
    def standing(self) -> Standing:
        if not self.validated:
            return Standing.OUTSIDE
        return Standing.CIRCULAR if self.circular else Standing.VALIDATED

    @property
    def envelope_verdict(self) -> str:
        """``envelope`` in one clause, for a line about a second plan (buyer trial s50 M10: the risk
        line repeated the whole ~600-character envelope sentence of the median's plan)."""
        if self.validated:
            return self.envelope
        widened = f"; band widened by {self.widened_by:.0%}" if self.widened_by else ""
        return f"outside the validated envelope (no measured row of {self.regime}{widened})"


class EfficiencyCeiling(BaseModel):
    """The best MFU measured in the estimate's regime (planner/accuracy/ceiling.py), the row that
    measured it, and whether it held this estimate back (``binding``: the model's own step was
    faster; ``uncapped_tokens_per_s`` is what it predicted)."""

    model_config = FROZEN
    mfu: float
    row: str
    source: str
    stack: str
    binding: bool
    uncapped_tokens_per_s: float
    gpu: str | None = None  # the GPU the row ran on (None: plan files before session 42)
    # Held by the best any stack measured with tp or pp, below its own family's best (trial s44 M1).
    split: bool = False
    # Not applied: a calibration file measured the GPU's kernel rates (``judged_estimate``), and
    # the record says what it would have held (calib50 H1: the ceiling was lifted unsaid, +20 %).
    lifted: bool = False
    # The row's GPU count, and whether the regime looked only at rows over more than one node (None:
    # plan files before them); buyer trial s50 L8: "scale" read as the plan's own
    num_gpus: int | None = None
    multi_node: bool | None = None

    def held_tokens_per_s(self, mfu: float, tokens_per_s: float) -> float | None:
        """Where a calibration file's kernel rates lifted this ceiling (``lifted``) and the estimate
        of ``mfu`` at ``tokens_per_s`` passes it: its tokens/s held at the ceiling; None otherwise."""
        if not self.lifted or mfu <= self.mfu:
            return None
        return tokens_per_s * self.mfu / mfu

    def own_mfu(self, mfu: float, tokens_per_s: float) -> float | None:
        """The model's own MFU where this ceiling holds an estimate of ``mfu`` at ``tokens_per_s``
        (None: not held); plans held at one ceiling differ there (trial s41)."""
        if not self.binding or tokens_per_s <= 0:
            return None
        return mfu * self.uncapped_tokens_per_s / tokens_per_s

    @property
    def measured_row(self) -> str:
        """'NB046 LLAMA3.1-405B (NeMo 25.04.01) on 512 x gb200': the row, and the GPUs it ran on (trial
        s42: a B200 plan held at a GB200 NVL72 row read as this GPU's own; buyer trial s50 L8: a
        4,096-GPU plan's row of 128 read as of its scale)."""
        if self.gpu is None:
            return self.row
        return f"{self.row} on {self.gpu}" if self.num_gpus is None else f"{self.row} on {self.num_gpus:,} x {self.gpu}"

    @property
    def scope_words(self) -> str:
        """What the ceiling is the best of: 'this GPU architecture and precision over more than one
        node, any model size and GPU count' (+ ', with tp or pp, by any stack' for a split layout
        held by that bound). The regime's one scale is one node or more (planner/accuracy/ceiling.py): its
        best row may be of a smaller model on fewer GPUs (buyer trial s50 L8: "scale" said more)."""
        split = ", with tp or pp, by any stack" if self.split else ""
        nodes = " over more than one node" if self.multi_node else ""
        return f"this GPU architecture and precision{nodes}, any model size and GPU count{split}"

    @property
    def measured_by(self) -> str:
        """'llm-foundry' or 'megatron-core, S13': the stack, and its source when that is another name."""
        return self.stack if self.source == self.stack else f"{self.stack}, {self.source}"


def summed_band(bands: Sequence[tuple[float, float] | None]) -> tuple[float, float] | None:
    """Several jobs' 80 % bands of a sum (their costs) added end to end; None where one has none or
    there are none. The jobs are priced by one model, whose errors the residuals of a regime move
    together, so the ends add rather than cancel as independent draws would (the portfolio's and the
    fleet's totals; review s35: two copies of this rule)."""
    if not bands or any(b is None for b in bands):
        return None
    return sum(b[0] for b in bands if b), sum(b[1] for b in bands if b)

"""Whole published pre-training runs against the planner's predicted GPU-hours (issue 26, "whole-run
realism"), held out: nothing in the planner was fitted on these runs.

data/validation/whole_runs.csv lists the runs, whole_runs_sources.md beside it how each row was read
and what each reported figure includes. ``read_whole_runs`` turns a row into a ``WholeRun`` or a
``SkippedRun`` with its reason, ``compare_whole_runs`` predicts every run (bench/validate_whole_runs.py
prints the tables). What is compared (``Basis``) follows what the reported figure includes: ``STEP``,
tokens / measured step throughput (LLaMA-1's Table 15: its 65B hours are 1.4T / 380 tok/s/GPU to 0.1 %;
DeepSeek-V3's 180K GPU-h per trillion tokens x 14.8T) against tokens / the plan's tokens/s (the step
model alone) x GPUs; ``WALL``, GPUs x wall clock, losses included (BLOOM's metered hours; wall-clock
days; Llama 2's exact multiples of 2,048 GPU-hours; card and blog totals) against the plan's time to train
(goodput: failures, checkpoints, restarts, ``run_losses``) x GPUs. A row is scored at the figure its
source states; where the source allows a range around it (``reported_range``: a rounded figure, a
quoted span of days) the error at the range's ends is shown beside it, never scored in its place.

Every run is predicted with the settings profile of the stack that ran it, nothing tuned (``RECIPES``,
validation/whole_run_recipes.py),
on the published GPU count (else 2,048: LLaMA-1 7B/13B/33B, Llama 2), at the final global batch and
the largest GPU count throughout (no batch ramp), bf16 unless stated. A published layout is used as
published, at micro-batch 1 unless published, accumulation = batch / (micro-batch x sequence x
data-parallel degree); what its source leaves open (recomputation, the 405B's vpp) is tried over the
values the layout allows and the fastest that fits memory kept (the fastest at all when none fits).
Without a published layout the planner's search chooses: its fastest candidate on exactly the run's
GPU count within its batch tolerance (5 %) of the published batch ("4M" is a rounded label). Models:
the CSV's preset, else its dimensions with the recipe's family and biases (blank ``tied``: whichever
lands nearer the published count). Every run is another stack's estimate (``build_plan`` with its
stack), so trainplan's own trainer limits do not bind (BLOOM, MPT: ALiBi; Falcon: parallel blocks
are families its native decoder does not build). Each recipe states its further ``assumptions``. The
band is the plan's 80 % band (held-out tokens/s errors of its regime) scaled like the prediction: it
speaks of the step, not of the losses.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.api import PlanRequest, build_plan
from planner.api.explore import scored_search
from planner.catalog.hardware import Catalog, load_catalog
from planner.catalog.models import get_preset
from planner.estimate_parts import GoodputEstimate
from planner.layout import Layout, Precision, TrainingConfig
from planner.model.goodput import LossShares, loss_shares
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.plan import Plan
from planner.search.space import DEFAULT_BATCH_TOLERANCE
from planner.units import SECONDS_PER_HOUR
from validation.flop_conventions import model_flops_noncausal_per_token
from validation.whole_run_recipes import DEEPSEEK_V3_RUN, HAI_LLM, RECIPES, SKIPPED, Basis, Recipe

DEFAULT_WHOLE_RUNS = Path(__file__).resolve().parent.parent / "data" / "validation" / "whole_runs.csv"
PARAM_COUNT_TOLERANCE = 0.06  # a rebuilt model lands within this of the published (rounded) count


@dataclass(frozen=True)
class WholeRun:
    """One run to predict. ``variants``: the published layout with each recomputation / vpp the
    source leaves open (empty: no layout published, the planner's search chooses)."""

    run_id: str
    name: str
    model: ModelSpec
    params_b: float
    num_gpus: int
    tokens: float
    seq_len: int
    global_batch_tokens: int
    precision: Precision
    recipe: Recipe  # its stack profile, basis, GPU and assumptions
    reported_gpu_hours: float  # the source's, or its wall-clock days x 24 x GPUs
    variants: tuple[tuple[Layout, TrainingConfig], ...]
    measured_tokens_per_s_per_gpu: float | None  # the step speed the source states (or its MFU implies)
    # GPU-hours at the ends of the range the source allows around its figure (None: it states one figure)
    reported_range_gpu_hours: tuple[float, float] | None = None

    @property
    def stack(self) -> Stack:
        return self.recipe.profile[0]

    @property
    def settings(self) -> ModelingSettings:
        return self.recipe.profile[1]

    @property
    def layout_source(self) -> str:
        return "published" if self.variants else "searched"


@dataclass(frozen=True)
class SkippedRun:
    run_id: str
    name: str
    reason: str


DIMS = (("num_layers", "layers"), ("hidden_size", "hidden"), ("ffn_hidden_size", "ffn"), ("num_heads", "heads"))


def _model(row: dict[str, str], recipe: Recipe) -> ModelSpec:
    """The CSV's preset (context stretched to the run's sequence), else its dimensions; a blank
    ``tied`` is whichever of tied / untied lands nearer the published count."""
    seq = int(row["seq_len"])
    if row["preset"]:
        preset = get_preset(row["preset"])
        return preset.model_copy(update={"max_seq_len": max(preset.max_seq_len, seq)})
    columns = (*DIMS, ("num_kv_heads", "kv_heads"), ("vocab_size", "vocab"))
    dims: dict[str, object] = {key: int(row[column]) for key, column in columns}
    dims |= {"name": row["run_id"], "max_seq_len": seq, "mlp": row["mlp"], **dict(recipe.arch)}
    dims |= {"norm": row["norm"].split()[0], "position": row["position"].split()[0]}
    dims["embedding_norm"] = "embedding layernorm" in row["norm"]
    tied = [row["tied"] == "true"] if row["tied"] else [True, False]
    options = [ModelSpec.model_validate({**dims, "tied_embeddings": t}) for t in tied]
    return min(options, key=lambda m: abs(m.num_params() / (float(row["params_b"]) * 1e9) - 1))


def _variants(row: dict[str, str], recipe: Recipe, num_gpus: int) -> tuple[tuple[Layout, TrainingConfig], ...]:
    """The published layout (blank tp / pp: 1; HSDP: ``replicas`` x a shard group) with each open
    recomputation, vpp and micro-batch."""
    if recipe.sharding is None:
        return ()
    tp, pp = int(row["tp"] or 1), int(row["pp"] or 1)
    dp = num_gpus // (tp * pp)
    assert tp * pp * dp == num_gpus and (not row["dp"] or int(row["dp"]) == dp), row["run_id"]
    assert dp % recipe.replicas == 0, row["run_id"]
    seq, batch = int(row["seq_len"]), int(row["global_batch_tokens"])
    precision = Precision(row["precision"] or "bf16")
    kept = [mb for mb in recipe.micro_batch if _keeps_batch(batch, mb, seq, dp)]
    assert kept, f"{row['run_id']}: no micro-batch keeps the published batch"  # else read as searched
    return tuple(
        (
            Layout(
                dp_replicate=recipe.replicas,
                dp_shard=dp // recipe.replicas,
                tp=tp,
                pp=pp,
                vpp=vpp,
                ep=recipe.ep,
                sharding=recipe.sharding,
            ),
            TrainingConfig(
                seq_len=seq,
                micro_batch=mb,
                grad_accum=TrainingConfig.grad_accum_for(batch, mb, seq, dp),
                activation_checkpointing=ac,
                precision=precision,
            ),
        )
        for ac in recipe.recompute
        for vpp in recipe.vpp
        for mb in kept
    )


def _keeps_batch(batch: int, micro_batch: int, seq: int, dp: int) -> bool:
    """Whether a micro-batch keeps the published batch within the search's tolerance: one pass
    over the data-parallel ranks must not outgrow it (MPT-7B: 4 sequences a GPU, so a micro-batch
    of 8 doubled its batch to 7.2M tokens and was timed as the fastest)."""
    tokens = micro_batch * TrainingConfig.grad_accum_for(batch, micro_batch, seq, dp) * seq * dp
    return abs(tokens - batch) <= DEFAULT_BATCH_TOLERANCE * batch


def _measured_step(row: dict[str, str], model: ModelSpec, peak_bf16: float) -> float | None:
    """The source's tokens/s/GPU, else its MFU (Chowdhery et al.'s count: non-causal attention)."""
    if row["measured_tokens_per_s_per_gpu"]:
        return float(row["measured_tokens_per_s_per_gpu"])
    if row["measured_mfu_pct"]:
        flops = model_flops_noncausal_per_token(model, int(row["seq_len"]))
        return float(row["measured_mfu_pct"]) / 100 * peak_bf16 / flops
    return None


def _reported_range(row: dict[str, str], num_gpus: int, reported: float) -> tuple[float, float] | None:
    """``reported_range`` ("low-high", in the unit of the reported figure: GPU-hours, else wall-clock
    days) as GPU-hours: what a rounded or ambiguous source allows (Falcon-180B's "~7,000,000" to one
    significant digit; Trinity Large's days, quoted as 30 to 33). The row is scored at its figure."""
    if not row["reported_range"]:
        return None
    scale = 1.0 if row["reported_gpu_hours"] else 24.0 * num_gpus
    low, high = (float(end) * scale for end in row["reported_range"].split("-"))
    assert low <= reported <= high, f"{row['run_id']}: the reported figure lies outside its range"
    return low, high


def _run(row: dict[str, str], recipe: Recipe, catalog: Catalog) -> WholeRun:
    num_gpus = int(row["num_gpus"]) if row["num_gpus"] else recipe.assumed_gpus
    assert num_gpus is not None, f"{row['run_id']}: no GPU count and none assumed"
    variants: tuple[tuple[Layout, TrainingConfig], ...]
    if recipe.profile is HAI_LLM:  # the MoE harness's row, as it is
        model, variants = DEEPSEEK_V3_RUN.model, ((DEEPSEEK_V3_RUN.layout, DEEPSEEK_V3_RUN.training),)
    else:
        model, variants = _model(row, recipe), _variants(row, recipe, num_gpus)
    reported = float(row["reported_gpu_hours"] or float(row["reported_wall_days"]) * 24 * num_gpus)
    peak = catalog.gpu(recipe.gpu).peak_flops("bf16")
    return WholeRun(
        run_id=row["run_id"],
        name=row["model"],
        model=model,
        params_b=float(row["params_b"]),
        num_gpus=num_gpus,
        tokens=float(row["tokens"]),
        seq_len=int(row["seq_len"]),
        global_batch_tokens=int(row["global_batch_tokens"]),
        precision=Precision(row["precision"] or "bf16"),
        recipe=recipe,
        reported_gpu_hours=reported,
        variants=variants,
        measured_tokens_per_s_per_gpu=_measured_step(row, model, peak),
        reported_range_gpu_hours=_reported_range(row, num_gpus, reported),
    )


def whole_runs_catalog(catalog: Catalog | None = None) -> Catalog:
    """The catalog the runs are predicted on (the built-in one, which holds the H800)."""
    return catalog or load_catalog()


def read_whole_runs(
    path: Path = DEFAULT_WHOLE_RUNS, catalog: Catalog | None = None
) -> tuple[list[WholeRun], list[SkippedRun]]:
    """Every row of the file, as a run to predict or skipped with its reason (a row without a recipe
    is skipped as such: a new row is never dropped silently)."""
    catalog = whole_runs_catalog(catalog)
    runs: list[WholeRun] = []
    skipped: list[SkippedRun] = []
    with Path(path).open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            run_id = row["run_id"]
            if run_id in RECIPES and run_id not in SKIPPED:
                runs.append(_run(row, RECIPES[run_id], catalog))
            else:
                reason = SKIPPED.get(run_id, "no recipe in validation/whole_run_recipes.py RECIPES")
                skipped.append(SkippedRun(run_id, row["model"], reason))
    return runs, skipped


@dataclass(frozen=True)
class Prediction:
    """What the planner predicts for one configuration of a run (``band``: measured / predicted time
    at the 80 % band's ends)."""

    layout: Layout
    training: TrainingConfig
    tokens_per_s: float
    time_to_train_h: float
    goodput: GoodputEstimate
    band: tuple[float, float]
    validated: bool
    fits: bool
    ceiling_binding: bool
    uncapped_tokens_per_s: float  # the step model before the MFU ceiling held it

    @classmethod
    def of_plan(cls, plan: Plan) -> Prediction:
        est = plan.estimate
        assert est.time_to_train_h is not None and est.goodput is not None and est.uncertainty is not None
        lo, hi = (s / est.time.step_s for s in est.uncertainty.step_s)
        uncapped = est.throughput.tokens_per_s if est.ceiling is None else est.ceiling.uncapped_tokens_per_s
        binding, tokens_per_s = est.ceiling is not None and est.ceiling.binding, est.throughput.tokens_per_s
        fields = (est.time_to_train_h, est.goodput, (lo, hi), est.uncertainty.validated, est.feasible, binding)
        return cls(plan.layout, plan.training, tokens_per_s, *fields, uncapped)


def predict(run: WholeRun, layout: Layout, training: TrainingConfig, catalog: Catalog) -> Prediction:
    """One configuration through ``build_plan`` with the run's stack: another stack's estimate, which
    trainplan's own trainer limits (the families its native decoder builds) do not bind. On the
    scale-out network its source states (else the GPU's default)."""
    plan = build_plan(
        run.model,
        run.recipe.gpu,
        layout,
        training,
        num_gpus=run.num_gpus,
        training_tokens=run.tokens,
        catalog=catalog,
        settings=run.settings,
        stack=run.stack,
        network=run.recipe.network,
    )
    return Prediction.of_plan(plan)


def published(run: WholeRun, catalog: Catalog) -> tuple[Prediction, str]:
    """The fastest variant that fits memory (the fastest at all when none fits), and what was tried."""
    tried: list[Prediction] = []
    for layout, training in run.variants:
        try:
            tried.append(predict(run, layout, training, catalog))
        except ValueError:  # a vpp or recomputation the layout's rules refuse
            continue
    if not tried:
        raise ValueError(f"{run.run_id}: no variant of the published layout is valid")
    fitting = [p for p in tried if p.fits]
    best = min(fitting or tried, key=lambda p: p.time_to_train_h)
    if len(run.variants) == 1:
        return best, ""
    ties = [p for p in fitting or tried if math.isclose(p.time_to_train_h, best.time_to_train_h, rel_tol=1e-9)]
    names = ", ".join(
        f"ac {p.training.activation_checkpointing.value} vpp {p.layout.vpp} mb {p.training.micro_batch}" for p in ties
    )
    note = f"{len(fitting)} of {len(tried)} valid variants fit"
    # A tie is the MFU ceiling holding them all, or modes that recompute nothing here (no block to spare).
    why = "held at the MFU ceiling" if all(p.ceiling_binding for p in ties) else "the same step"
    return best, note + (f"; {names} tie ({why}), the first shown" if len(ties) > 1 else "")


def searched(run: WholeRun, catalog: Catalog) -> Prediction:
    """The fastest candidate of the planner's search on exactly the run's GPU count (and the pipeline
    degrees its source allows) that fits, divides and keeps the batch within the search's tolerance
    (5 %: the published "4M" / "2.36M" are rounded labels; holding 4,000,000 tokens exactly would
    force odd data-parallel degrees)."""
    request = PlanRequest(
        model=run.model,
        training_tokens=run.tokens,
        gpus={run.recipe.gpu: run.num_gpus},
        seq_len=run.seq_len,
        global_batch_tokens=run.global_batch_tokens,
        precision=run.precision,
        stack=run.stack,
        attention=run.settings.attention_kernel,
        max_gpus=run.num_gpus,
        top_k=0,
        network=run.recipe.network,
    )
    search = scored_search(request, catalog=catalog, settings=run.settings)
    table = search.table
    allowed = table.valid() & (table.num_gpus == run.num_gpus)
    if run.recipe.searched_pp:
        allowed &= np.isin(np.asarray(search.candidates.pp), run.recipe.searched_pp)
    rows = np.flatnonzero(allowed)
    if not rows.size:
        raise ValueError(f"{run.run_id}: no candidate on {run.num_gpus} GPUs fits and keeps the batch")
    best = int(rows[np.argmin(table.extra["model_time_s"][rows])])
    return Prediction.of_plan(search.plan_for_row(best, run.settings))


@dataclass(frozen=True)
class WholeRunComparison:
    run: WholeRun
    prediction: Prediction
    generation: str  # the GPU's architecture (catalog), which the summaries group by
    note: str = ""  # what was tried of an open choice

    @property
    def step_h(self) -> float:
        """Hours of the step model alone (no losses)."""
        return self.run.tokens / self.prediction.tokens_per_s / SECONDS_PER_HOUR

    @property
    def predicted_gpu_hours(self) -> float:
        hours = self.step_h if self.run.recipe.basis == Basis.STEP else self.prediction.time_to_train_h
        return hours * self.run.num_gpus

    @property
    def band_gpu_hours(self) -> tuple[float, float]:
        lo, hi = self.prediction.band
        return self.predicted_gpu_hours * lo, self.predicted_gpu_hours * hi

    @property
    def error(self) -> float:
        return self.predicted_gpu_hours / self.run.reported_gpu_hours - 1

    @property
    def error_range(self) -> tuple[float, float] | None:
        """The error at the two ends of the range the source allows (the larger figure, the smaller error)."""
        span = self.run.reported_range_gpu_hours
        return (
            None if span is None else (self.predicted_gpu_hours / span[1] - 1, self.predicted_gpu_hours / span[0] - 1)
        )

    @property
    def in_band(self) -> bool:
        lo, hi = self.band_gpu_hours
        return lo <= self.run.reported_gpu_hours <= hi

    @property
    def losses(self) -> LossShares:
        return loss_shares(self.prediction.goodput, self.step_h, self.prediction.time_to_train_h)

    @property
    def step_error(self) -> float | None:
        """The step model (tokens/s/GPU) against the step speed the source states, where it states one."""
        measured = self.run.measured_tokens_per_s_per_gpu
        return None if measured is None else self.prediction.tokens_per_s / self.run.num_gpus / measured - 1


def compare_whole_runs(runs: list[WholeRun] | None = None, catalog: Catalog | None = None) -> list[WholeRunComparison]:
    """Predict every run (``read_whole_runs`` when none is given) and compare it with its report."""
    catalog = whole_runs_catalog(catalog)
    out = []
    for run in runs if runs is not None else read_whole_runs(catalog=catalog)[0]:
        prediction, note = published(run, catalog) if run.variants else (searched(run, catalog), "")
        out.append(WholeRunComparison(run, prediction, catalog.gpu(run.recipe.gpu).generation, note))
    return out

"""What the Streamlit app (``app.py``) computes without Streamlit: solving a request or a job
list, the widgets' defaults, tables of plans and jobs, formatters, reading an uploaded config (the
job files, zipped or run locally, are ``ui/app_jobs.py``; the portfolio's answer is
``ui/app_portfolio.py``). The charts are ``ui/figures.py``; the page is ``ui/single.py`` and its
neighbours. Everything here is testable without Streamlit. No planning happens here: every number
comes from ``planner.api`` / ``planner.api.explore``.
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from planner.accuracy import DEFAULT_RISK
from planner.api import PlanRequest, PlanResult, plan
from planner.catalog.calibration import AppliedCalibration
from planner.catalog.hardware import Catalog
from planner.catalog.models import MAX_CONFIG_BYTES, get_preset, model_from_hf_config
from planner.catalog.prices import PriceBasis
from planner.errors import CountPastInventory, InfeasiblePlan, NamedPlan, RuleViolation
from planner.fmt import duration_parts, one_line
from planner.fmt import money as _money
from planner.layout import Precision
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.plan import Plan
from planner.request import DEFAULT_AC, DEFAULT_SEQ_LEN
from planner.search.ownership import GpuEconomics, TcoAssumptions, owned_usd_per_busy_gpu_hour
from planner.search.space import DEFAULT_MAX_GPUS
from planner.units import GIB, HOURS_PER_DAY
from ui.i18n_run_losses import LOSS_KEYS

CHINCHILLA_TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022: compute-optimal tokens per parameter


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Infeasible:
    """An InfeasiblePlan as plain data (the exception itself does not pickle for st.cache_data)."""

    constraint: str
    detail: str
    fix: str
    required: float | None = None  # InfeasiblePlan's typed figures (GiB, GPUs, seconds, USD)
    available: float | None = None
    more_gpus_help: bool | None = None  # InfeasiblePlan's: whether more GPUs meet the deadline
    jobs: tuple[tuple[str, Infeasible], ...] = ()  # InfeasiblePlan's: each job's own answer
    batch_tokens: int | None = None  # InfeasiblePlan's: the global batch at which the deadline is met
    batch_seconds: float | None = None  # and the time to train at it
    named: NamedPlan | None = None  # InfeasiblePlan's: the plan its figures are of (budget: the cheapest)
    job: str | None = None  # InfeasiblePlan's: the one job of several it is the answer of
    within_budget_seconds: float | None = None  # InfeasiblePlan's: the time the budget meets (under a deadline)
    deadline_seconds: float | None = None  # InfeasiblePlan's: the deadline a budget answer's cheapest plan meets
    more_gpus: CountPastInventory | None = None  # InfeasiblePlan's: the fewest GPUs past the inventory
    tokens_within_budget: float | None = None  # InfeasiblePlan's: the tokens a budget trains
    larger_batch: CountPastInventory | None = None  # InfeasiblePlan's: a larger batch's plan past the cap

    @classmethod
    def of(cls, exc: InfeasiblePlan) -> Infeasible:
        jobs = tuple((name, cls.of(job)) for name, job in exc.jobs)
        figures = (exc.required, exc.available, exc.more_gpus_help)
        batch = (exc.batch_tokens, exc.batch_seconds)
        return cls(
            exc.constraint.value,
            exc.detail,
            exc.fix,
            *figures,
            jobs,
            *batch,
            exc.named,
            exc.job,
            exc.within_budget_seconds,
            exc.deadline_seconds,
            exc.more_gpus,
            exc.tokens_within_budget,
            exc.larger_batch,
        )


@dataclass(frozen=True)
class PlanOutcome:
    """What the app shows for one request: a result, or why there is none."""

    result: PlanResult | None = None
    infeasible: Infeasible | None = None
    error: str | None = None


def solve(
    request: PlanRequest,
    settings: ModelingSettings,
    catalog: Catalog | None = None,
    calibration: AppliedCalibration | None = None,
) -> PlanOutcome:
    """``planner.api.plan`` with its user-facing failures turned into data (``calibration``: a
    calibrated catalog, recorded on the plans, instead of ``catalog``)."""
    try:
        return PlanOutcome(result=plan(request, catalog=catalog, settings=settings, calibration=calibration))
    except InfeasiblePlan as exc:
        return PlanOutcome(infeasible=Infeasible.of(exc))
    except ValueError as exc:
        return PlanOutcome(error=one_line(exc))


# --------------------------------------------------------------------------- formatting


# The app writes cents below $100 (``money``); a band's ends follow their figure's choice.
CENTS_BELOW_USD = 100.0


def money(usd: float, column_max: float = 0.0) -> str:
    """$1.23M, $12,345 or $9.35: whole dollars where cents would be noise; ``column_max``: the
    larger figure it stands beside, whose unit it takes (``planner.fmt.money``)."""
    return _money(usd, cents_below=CENTS_BELOW_USD, column_max=column_max)


ROW_PX = 35  # st.dataframe's (and st.data_editor's) row height


def table_height(rows: int) -> int:
    """Pixels that show every row of a table (and its header) without inner scrolling."""
    return ROW_PX * (rows + 1) + 3


MAX_HEADROOM_PCT = 50  # the sidebar's memory headroom slider's top (and what a memory warning may ask for)
BLANK = "—"  # a table's empty cell (Streamlit writes "None" unless told; issue 30)
DOLLARS = "$%,.0f"  # a table's money column (and its band's): whole dollars, like the plan card


def token_count(tokens: int) -> str:
    """Binary-prefixed token counts as batch sizes are usually quoted: 8K, 512K, 4M."""
    return f"{tokens / 2**20:g}M" if tokens >= 2**20 else f"{tokens / 2**10:g}K"


def duration_key(hours: float) -> tuple[str, float]:
    """('days_value', days) from two days on, else ('hours_value', hours): a label key and its number."""
    unit, value = duration_parts(hours)
    return f"{unit}_value", value


# --------------------------------------------------------------------------- inputs


DEFAULT_PRESET = "llama3-8b"


def job_box_defaults() -> dict[str, object]:
    """The portfolio's per-job boxes as they start, and as Add job leaves them for the next job
    (app53 M4: the next job silently kept the last one's predecessors and release day)."""
    return {
        "job_start_after": 0.0,  # a job's start_after_days: from the start
        "job_after": [],  # the jobs a job starts after: none
    }


def widget_defaults(cat: Catalog) -> dict[str, object]:
    """Every widget's starting value, by widget key (the app puts them in session_state once)."""
    tco = TcoAssumptions()
    base = get_preset(DEFAULT_PRESET)
    values: dict[str, object] = {
        "lang": "en",
        "model_source": "preset",
        "preset": DEFAULT_PRESET,
        "tokens_mode": "chinchilla",
        "chinchilla_multiple": 1.0,
        "tokens_billions": 100.0,
        "seq_len": DEFAULT_SEQ_LEN,
        "global_batch": 0,
        "deadline_days": 0.0,
        "budget_usd": 0.0,
        "objective": "cost",
        "cost_weight": 0.5,
        "pricing": "on_demand",
        "precision": Precision.BF16.value,
        "ac": [a.value for a in DEFAULT_AC],  # the planner's default modes (attention-only is opt-in)
        "allow_offload": False,
        "headroom_pct": round(DEFAULT_SETTINGS.memory_headroom * 100),
        "term_filled_pct": 0,  # --term-filled: a reserved term billed whole (review s43)
        "top_k": 10,
        "max_gpus": DEFAULT_MAX_GPUS,
        "portfolio_mode": False,
        "stack": Stack.TRAINPLAN.value,
        "attention": "",  # the stack's own kernel
        "compile": False,  # torch.compile over the model (--compile), where the stack has it
        "partition_activations": False,  # Megatron-DeepSpeed's --partition-activations
        "moe_a2a_overlap": False,  # Megatron-Core's --overlap-moe-expert-parallel-comm
        "tp_comm_overlap": True,  # Megatron-Core's --tp-comm-overlap, on as its recipes run it
        "grad_reduce_bf16": False,  # Megatron's --grad-reduce-in-bf16
        "param_remainders": False,  # Megatron-Core's --use-precision-aware-optimizer
        "pure_bf16": False,  # --pure-bf16 (trainplan, torchtitan, hf-trainer)
        "network": "",  # each GPU on its catalog default network
        "risk": DEFAULT_RISK.value,
        "why_not_gpu": "",
        "scaling_gpu": "",
        "emit_name": "trainplan-job",
        "emit_steps": None,  # the plan's token budget (emit's default)
        "run_steps": 20,
        "job_name": "job-1",
        "horizon_days": 0.0,
        **job_box_defaults(),
        "num_slots": 1,
        "portfolio_answer": "on_inventory",  # the portfolio's jobs on the inventory, or rent vs buy (fleet)
        "fleet_horizon_days": 365.0,  # a year, as examples/fleet.toml (fleet needs a horizon)
        "fleet_num_slots": 12,  # plan_fleet's default
        "fleet_buy": [],  # the types to buy: none until the user picks (the CLI's file names them too)
        "tco_utilisation": 0.7,
        "tco_lifetime_years": tco.lifetime_years,
        "tco_residual": tco.residual_fraction,
        "tco_electricity": tco.electricity_usd_per_kwh,
        "tco_hosting": tco.hosting_usd_per_gpu_month,
        "tco_pue": tco.pue,
        "tco_capital": tco.cost_of_capital_rate,
        "custom_layers": base.num_layers,
        "custom_hidden": base.hidden_size,
        "custom_ffn": base.ffn_hidden_size,
        "custom_heads": base.num_heads,
        "custom_kv_heads": base.num_kv_heads,
        "custom_vocab": base.vocab_size,
        "custom_experts": 1,
        "custom_experts_per_token": 1,
        "run_dir": "",
        "ex_gpu": "h100-sxm",
        "ex_num_gpus": 8,
        "ex_tp": 1,
        "ex_pp": 1,
        "ex_vpp": 1,
        "ex_cp": 1,
        "ex_ep": 1,
        "ex_dp_replicate": 1,
        "ex_sharding": "fsdp",
        "ex_micro_batch": 1,
        "ex_grad_accum": 1,
        "ex_ac": "none",
        "ex_precision": "bf16",
        **dict.fromkeys(LOSS_KEYS.values()),  # the run-loss boxes: empty, the planner's defaults
    }
    return values


def chinchilla_tokens(model: ModelSpec, multiple: float) -> float:
    return multiple * CHINCHILLA_TOKENS_PER_PARAM * model.num_params()


def amortised_price_per_gpu_hour(
    purchase_usd: float, wall_power_w: float, utilisation: float, tco: TcoAssumptions
) -> float:
    """Owning a GPU expressed as USD per busy GPU-hour (docs/app.md): the fleet sizing's own
    formula (:func:`planner.search.ownership.owned_usd_per_busy_gpu_hour`): the fixed cost of owning
    it (:func:`planner.search.ownership.ownership_usd`) and its idle draw, spread over the busy
    hours, plus the power it draws at the wall while it trains (planner/model/energy.py;
    ``wall_power_w`` from ``gpu_wall_power_w``).
    """
    if not purchase_usd > 0:
        raise ValueError(f"purchase price must be > 0 USD, got {purchase_usd}")
    return owned_usd_per_busy_gpu_hour(GpuEconomics(purchase_usd, wall_power_w), tco, utilisation)


UPLOAD_LIMIT_MB = MAX_CONFIG_BYTES // 1_000_000  # the uploader's cap: Streamlit's browser counts 1 MB as 10**6 bytes


class UploadTooLarge(ValueError):
    """An upload over ``MAX_CONFIG_BYTES``, with its figures (the app renders it in the page's language)."""

    def __init__(self, name: str, size_bytes: int, what: str = "a model config") -> None:
        super().__init__(
            f"{name}: {size_bytes / 1e6:.1f} MB is over the {MAX_CONFIG_BYTES / 1e6:.0f} MB limit for {what}"
        )
        self.name, self.size_bytes = name, size_bytes


def model_from_upload(data: bytes, filename: str) -> ModelSpec:
    """A ModelSpec from an uploaded ``config.json``; ValueError (one line naming the upload) if unusable.

    The bytes go to a private temporary folder, which is removed again; the reader rejects
    files over ``MAX_CONFIG_BYTES`` itself, but the size is checked first so nothing large is written.
    """
    shown = Path(filename).name or "upload"
    if len(data) > MAX_CONFIG_BYTES:
        raise UploadTooLarge(shown, len(data))
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(shown).stem).strip(".-") or "config"
    folder = Path(tempfile.mkdtemp(prefix="trainplan-upload-"))
    path = folder / f"{stem}.json"
    try:
        path.write_bytes(data)
        return model_from_hf_config(path)
    except RuleViolation as exc:  # the same rule, naming the upload instead of the temporary file
        raise RuleViolation(exc.code, {**exc.figures, "where": shown}) from None
    except ValueError as exc:
        raise ValueError(str(exc).replace(str(path), shown)) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- tables


def local_gpus_frame(found: Sequence) -> pd.DataFrame:
    """``planner.catalog.detect.DetectedGPU`` rows: index, name, memory, catalog match."""
    return pd.DataFrame(
        [
            {
                "index": g.index,
                "name": g.name,
                "memory_gib": g.memory_bytes / GIB,
                "catalog": g.spec.id if g.spec else "-",
            }
            for g in found
        ]
    )


def jobs_frame(
    requests: dict[str, PlanRequest],
    releases: dict[str, float] | None = None,
    after: dict[str, tuple[str, ...]] | None = None,
) -> pd.DataFrame:
    """One row per job; ``releases``: each job's start_after_days, where set; ``after``: the jobs
    each starts after, where any."""
    return pd.DataFrame(
        [
            {
                "job": name,
                "model": r.model.name,
                "tokens_b": r.training_tokens / 1e9,
                "start_after_days": (releases or {}).get(name),
                "after": ", ".join((after or {}).get(name, ())),
                "deadline_days": r.deadline_days,
                "budget_usd": r.budget_usd,
            }
            for name, r in requests.items()
        ]
    )


def top_plans_frame(plans: Sequence[Plan], risk: str = "p80") -> pd.DataFrame:
    """One row per plan (the chosen one first), numeric columns kept numeric so they sort; the time
    and cost at ``risk``, the quantile the search ranked them by."""
    rows = []
    for rank, p in enumerate(plans, start=1):
        e, t = p.estimate, p.training
        hours, cost = e.time_h_at(risk), e.cost_usd_at(risk)
        rows.append(
            {
                "rank": rank,
                "gpu": p.gpu,
                "num_gpus": p.num_gpus,
                "num_nodes": p.num_nodes,
                "layout": p.layout_words,
                "micro_batch": t.micro_batch,
                "grad_accum": t.grad_accum,
                "ac": t.activation_checkpointing.value,
                "time_to_train_days": (e.time_to_train_h or math.nan) / HOURS_PER_DAY,
                # the 80 % bands of time, cost and tokens/s, as the card's (planner/accuracy; trial s33)
                **band_columns(e, "time_to_train_h", "time_p10_days", "time_p90_days", HOURS_PER_DAY),
                **band_columns(e, "cost_usd", "cost_p10_usd", "cost_p90_usd"),
                **band_columns(e, "tokens_per_s", "tokens_p10_per_s", "tokens_p90_per_s"),
                "cost_usd": e.cost_usd,
                "time_at_risk_days": math.nan if hours is None else hours / HOURS_PER_DAY,
                "cost_at_risk_usd": math.nan if cost is None else cost,
                # the price behind the cost, and whether it is an estimate (review s28, as the CLI's table)
                "price_usd_per_gpu_hour": p.price_per_gpu_hour_usd,
                "price_estimated": p.price_basis is not None and PriceBasis(p.price_basis).estimated,
                "energy_kwh": e.energy_kwh,
                "mfu": e.throughput.mfu,
                # the model's own where the efficiency ceiling holds the plan (trial s41: held plans
                # showed one figure, their trade-offs nowhere)
                "mfu_model": math.nan if e.model_mfu is None else e.model_mfu,
                "tokens_per_s": e.throughput.tokens_per_s,
                "memory_gib": e.memory.reserved_gib,
                # the reserved peak's band's high end (review s39: the CLI's table marked the plans
                # whose band passes the GPU, the app's had no memory band at all)
                "memory_p90_gib": math.nan if (m := e.memory_band) is None else m.reserved_gib[1],
                "capacity_gib": e.memory.capacity_gib,
            }
        )
    return pd.DataFrame(rows)


def band_columns(e, field: str, lo: str, hi: str, unit: float = 1.0) -> dict[str, float]:
    """A figure's 80 % band (``Uncertainty.<field>``) as two table columns in ``unit``s; NaN (a blank
    cell) where the estimate has none."""
    band = None if e.uncertainty is None else getattr(e.uncertainty, field)
    low, high = (math.nan, math.nan) if band is None else band
    return {lo: low / unit, hi: high / unit}

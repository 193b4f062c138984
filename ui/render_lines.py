"""The lines of a plan's summary beside its figures (``ui/render.py`` ``summary_lines``): the
band's median, a figure outside its band, host memory, the step, the efficiency ceiling, goodput,
the batch asked for and the windowed layers. Split from ui/render.py (review s27: it passed 500 lines)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from planner.catalog.hardware import load_catalog
from planner.catalog.specs import NodeTemplate
from planner.estimate_parts import GoodputEstimate
from planner.explain import windowed_layers
from planner.fmt import counted, duration_h, duration_words, expected_events, money, number_band
from planner.model.goodput import MIN_GOODPUT
from planner.model.run_loss_inputs import RunLossInputs, by_job
from planner.plan import Estimate, Plan
from planner.units import SECONDS_PER_MINUTE

# A median this far from the model's own figure is said beside it (trial s27: a buyer quoted the
# headline, $840k, whose band's median was $930k).
MEDIAN_NOTE_FRACTION = 0.02


@dataclass(frozen=True)
class MedianOffset:
    """The band's median where it lies more than MEDIAN_NOTE_FRACTION from the model's figure."""

    hours: float  # the time to train at p50
    cost_usd: float | None  # the cost at p50
    fraction: float  # p50 / the model's time, less 1: above when positive
    rows: int  # the rows the band is read from
    model_abs: float  # their mean |error| held out, the model's figure
    median_abs: float | None  # the same, each moved to its held-out band's median (None: not recorded)

    @property
    def median_erred_less(self) -> bool | None:
        """Whether the median erred less on the band's rows than the model's figure (the headline
        keeps the model's: over all rows it erred less, docs/validation.md; trial s48 H2)."""
        return None if self.median_abs is None else self.median_abs < self.model_abs


def median_offset(e: Estimate) -> MedianOffset | None:
    """The band's median (p50) where it lies more than MEDIAN_NOTE_FRACTION from the figure the
    headline shows; None otherwise (the CLI's line, the app's card)."""
    p50, u, hours = e.time_h_at("p50"), e.uncertainty, e.time_to_train_h
    if u is None or hours is None or p50 is None or abs(p50 / hours - 1) <= MEDIAN_NOTE_FRACTION:
        return None
    return MedianOffset(p50, e.cost_usd_at("p50"), p50 / hours - 1, u.rows, u.mean_abs_error, u.median_abs_error)


def median_line(e: Estimate) -> str | None:
    """'median (p50) 11.1 days, $929,749: 10% above the model's figure ...' (``median_offset``)."""
    m = median_offset(e)
    if m is None:
        return None
    side = "above" if m.fraction > 0 else "below"
    if m.median_abs is None:
        why = ": on held-out runs it erred less than the band's median does (docs/validation.md)"
    elif m.median_erred_less:
        why = (
            f", though on those {m.rows} rows, held out, the median erred less ({m.median_abs:.1%} against"
            f" {m.model_abs:.1%}); over every row the model's figure erred less (docs/validation.md)"
        )
    else:
        why = f": on those {m.rows} rows, held out, it erred {m.model_abs:.1%}, the median {m.median_abs:.1%}"
    return (
        f"median (p50) {duration_h(m.hours)}" + ("" if m.cost_usd is None else f", {money(m.cost_usd)}")
        + f": {abs(m.fraction):.0%} {side} the model's figure, as the rows nearest this"
        f" regime ran; the headline keeps the model's own figure{why}"
    )  # fmt: skip


def risk_figures_line(e: Estimate) -> str | None:
    """'at p80: 35.0 days, $1.40M; at p90: 38.0 days, $1.52M (the figures plan --risk p80 / p90
    judges by)' (trial s38: only plan's table and the JSON gave them, so a buyer re-running a
    layout could not see the figure it was ranked by); None without a band."""
    parts = []
    for risk in ("p80", "p90"):
        hours, cost = e.time_h_at(risk), e.cost_usd_at(risk)
        if hours is not None:
            parts.append(f"at {risk}: {duration_h(hours)}" + ("" if cost is None else f", {money(cost)}"))
    return None if not parts else "; ".join(parts) + " (the figures plan --risk p80 / p90 judges by)"


def few_rows_line(e: Estimate) -> str | None:
    """'p80 and p90 both read the farthest of the 3 measured rows of megatron-core on Hopper, ...
    (+8%, +130%, +133%): too few rows to tell one quantile from another' where a regime's few rows,
    not a spread, set them (buyer trial s48 M2: p80 and p90 both 17.1 days, unexplained); None else."""
    u = e.uncertainty
    end = None if u is None else u.few_rows_end
    if end is None:
        return None
    errors = ", ".join(f"{x:+.0%}" for x in end.errors)
    rows = f"the {counted(len(end.errors), 'measured row')} of {end.regime} ({errors})"
    return f"{' and '.join(end.risks)} both read the farthest of {rows}: too few rows to tell one quantile from another"


def point_outside_line(side: str) -> str:
    """Why a figure stands outside its own band: the evidence leans one way."""
    return (
        f"note: the model's figures lie outside their 80 % bands: the rows nearest this regime ran {side} than"
        " predicted, even at the band's near end; expect the band, not the figure"
    )


def host_note(e: Estimate) -> str:
    """'; host 526 of 922 GiB per node (offloaded states)' for a plan with CPU offload."""
    m = e.memory
    if m.host_gib_per_node is None or m.host_allowed_gib is None:
        return ""
    return f"; host {m.host_gib_per_node:,.0f} of {m.host_allowed_gib:,.0f} GiB per node (offloaded states)"


def step_line(e: Estimate) -> str:
    """'step 4.739 s (4.301-5.812), 884,987 tokens/s (722,004-975,210) (432/GPU), MFU 59.3% (48.3-65.3%),
    HFU 59.3%': the 80 % band in brackets where the estimate has one, as precise as the point (trial s24)."""
    u = e.uncertainty
    step = f"{e.time.step_s:.3f} s" + ("" if u is None else f" ({u.step_s[0]:.3f}-{u.step_s[1]:.3f})")
    tokens = number_band(e.throughput.tokens_per_s, None if u is None else u.tokens_per_s)
    return (
        f"step {step}, {tokens} tokens/s ({number_band(e.throughput.tokens_per_s_per_gpu, None)}/GPU), "
        f"MFU {e.throughput.mfu:.1%}{_percent_band(None if u is None else u.mfu)}, HFU {e.throughput.hfu:.1%}"
    )


def _percent_band(band: tuple[float, float] | None) -> str:
    """' (48.3-65.3%)': a share's band in percent (none: '')."""
    return "" if band is None else f" ({100 * band[0]:.1f}-{band[1]:.1%})"


def ceiling_line(e: Estimate) -> str:
    """Why the estimate is slower than the model alone: the efficiency ceiling it was held at."""
    c = e.ceiling
    assert c is not None
    return (
        f"efficiency ceiling: held at {c.mfu:.1%} MFU, the best measured on {c.scope_words}"
        f" ({c.measured_by}: {c.measured_row}); the model alone predicts {c.uncapped_tokens_per_s:,.0f} tokens/s"
        f" (if this is that run, the figure is its own measurement, not a check of it); the band's fast end may"
        " pass it: measured runs have beaten their regime's best before (docs/validation.md, 'The efficiency"
        " ceiling'; trial s35 asked why it does)"
    )


def ceiling_lifted_line(e: Estimate) -> str | None:
    """'efficiency ceiling: lifted by the calibration file's h100-sxm kernel rates; ...' where the
    estimate passes the ceiling its regime has (calib50 H1: a file restating the catalog's GEMM rate
    made a step 20 % faster, unsaid); None where it does not pass it."""
    c = e.ceiling
    held = None if c is None else c.held_tokens_per_s(e.throughput.mfu, e.throughput.tokens_per_s)
    if c is None or held is None:
        return None
    return (
        f"efficiency ceiling: lifted by the calibration file's kernel rates of this GPU: the model's"
        f" {e.throughput.mfu:.1%} MFU passes {c.mfu:.1%}, the best measured on {c.scope_words}"
        f" ({c.measured_by}: {c.measured_row}); kernel rates measure kernels, not the step: held there,"
        f" {held:,.0f} tokens/s (--no-calibration)"
    )


def band_passing_ceiling(e: Estimate) -> float | None:
    """The MFU band's fast end where it passes the efficiency ceiling the estimate is not held at
    (trial s38 finding 12, s39 app finding 7: a 76 % end against a 62.5 % ceiling, unsaid); None
    otherwise (a held estimate says so in ``ceiling_line``)."""
    c, u = e.ceiling, e.uncertainty
    if c is None or c.binding or c.lifted or u is None or u.mfu is None or u.mfu[1] <= c.mfu:
        return None
    return u.mfu[1]


def ceiling_passed_line(e: Estimate) -> str | None:
    """'efficiency ceiling: the MFU band's fast end, 76.0%, passes 62.5%, the best measured ...'."""
    if (high := band_passing_ceiling(e)) is None:
        return None
    c = e.ceiling
    assert c is not None
    return (
        f"efficiency ceiling: the MFU band's fast end, {high:.1%}, passes {c.mfu:.1%}, the best measured on"
        f" {c.scope_words} ({c.measured_by}: {c.measured_row}): read that end as the band's arithmetic,"
        " not as a run anyone has measured"
    )


def seconds_words(seconds: float) -> str:
    """'49 s', '0.4 s', '< 0.1 s': a short time whose rounding to whole seconds read as nothing
    (trial s27: an 8B model's checkpoint "0 s to write")."""
    if seconds >= 10:
        return f"{seconds:,.0f} s"
    return f"{seconds:.1f} s" if seconds >= 0.1 else "< 0.1 s"


def no_progress(g: GoodputEstimate | None) -> bool:
    """Whether failures outpace the job's progress: its goodput is the floor the search scores
    such a job at (planner/model/goodput.py MIN_GOODPUT), not a figure."""
    return g is not None and g.goodput_fraction <= MIN_GOODPUT


def goodput_line(g: GoodputEstimate) -> str:
    """``goodput 92.4%: MTTF 3.1 h, 419 expected interruptions, checkpoint every 4.0 minutes ...``."""
    # trial s38: "goodput 0.1%" and a time with a band, for a job that never ends
    if g.mttf_h is not None and no_progress(g):
        return (
            f"goodput none: a failure every {duration_words(g.mttf_h * 3600)} on average outpaces a restart of"
            f" {duration_words(g.restart_s)} plus half a checkpoint interval, so the job never finishes; its"
            f" time above is the floor the search scores it at ({1 / MIN_GOODPUT:,.0f}x the failure-free time)"
        )
    # failure rate 0 (--failure-rate-x 0): the other losses still count (was "goodput 100%", whatever they took)
    parts = ["no failures modelled (failure rate 0)"] if g.mttf_h is None else [f"MTTF {g.mttf_h:,.1f} h"]
    if g.expected_interruptions is not None and g.mttf_h is not None:
        parts.append(f"{expected_events(g.expected_interruptions)} expected interruptions")
    if g.checkpoint_interval_min is not None:
        steps = f"{counted(g.checkpoint_interval_steps, 'step')}, " if g.checkpoint_interval_steps is not None else ""
        parts.append(
            f"checkpoint every {duration_words(g.checkpoint_interval_min * SECONDS_PER_MINUTE)}"
            f" ({steps}{seconds_words(g.checkpoint_write_s)} to write)"
        )
    if g.mttf_h is not None:
        parts.append(f"restart {duration_words(g.restart_s)}")
    if g.capacity_wait_s > 0:  # trial s30: a preemption was timed as a failure, no wait
        count = (
            "spot preemptions"
            if g.spot_preemptions is None
            else f"{expected_events(g.spot_preemptions)} spot preemptions"
        )
        parts.append(f"{count}, each waiting {duration_words(g.capacity_wait_s)} for capacity")
    parts.append(
        f"slowest rank +{g.straggler_fraction:.1%}, evaluation +{g.evaluation_fraction:.1%}"
        + (f", input stalls +{g.data_stall_fraction:.1%}" if g.data_stall_fraction else "")
        # trial s27: "planned restarts" read as restarts of the job's own; they are the hosts' maintenance
        + ("" if g.planned_restarts is None else f", {expected_events(g.planned_restarts)} maintenance restarts")
        + f", start-up {duration_words(g.startup_s)}"
    )
    return f"goodput {g.goodput_fraction:.1%}: " + ", ".join(parts)


def figures_words(losses: RunLossInputs) -> str:
    """'on your figures: failure rate 2x, input stalls 5 %' where the user's own run-loss figures
    replaced the defaults a time or goodput would otherwise rest on ('' where none did)."""
    words = losses.words()
    return f"on your figures: {words}" if words else ""


def run_losses_note(p: Plan) -> str:
    """'; on your figures: ...' after the goodput line (``figures_words``)."""
    words = figures_words(p.run_losses)
    return f"; {words}" if words else ""


def jobs_figures_lines(losses: dict[str, RunLossInputs]) -> list[str]:
    """Under portfolio's table: which jobs' days rest on the jobs file's run-loss keys, one line for
    all where every job has the same ('every job's days on your figures: input stalls 5 %'), else a
    line per job that gave some ('chat-8b's days on your figures: ...')."""
    return [f"{'every job' if job is None else job}'s days {figures_words(given)}" for job, given in by_job(losses)]


def release_line(release_days: Mapping[str, float]) -> str | None:
    """'released: ft-8b on day 120, ft-3b on day 150 (start_after_days; deadlines count from day 0)',
    portfolio's and fleet's alike (trial s51 H4); None where no job has a release."""
    if not release_days:
        return None
    jobs = ", ".join(f"{job} on day {day:,g}" for job, day in release_days.items())
    return f"released: {jobs} (start_after_days: none starts earlier; deadlines count from day 0)"


def after_line(after: Mapping[str, Sequence[str]]) -> str | None:
    """'after: sft-8b after pretrain-8b; eval after sft-8b, ablation (none starts before those end)',
    portfolio's and fleet's alike (a jobs file's after); None where no job has one."""
    if not after:
        return None
    jobs = "; ".join(f"{job} after {', '.join(before)}" for job, before in after.items())
    return f"after: {jobs} (none starts before those end; deadlines count from day 0)"


def jobs_run_losses_json(losses: dict[str, RunLossInputs]) -> dict:
    """portfolio's and fleet's --json "run_losses": job -> its run-loss figures, as plan's (null: the
    default), found or not (trial s48: an infeasible answer's days rest on them, and said none)."""
    return {job: given.model_dump(mode="json") for job, given in losses.items()}


def batch_note(e: Estimate) -> str:
    """Beside the batch: the requested one, when the layout could not make it exactly, and whether
    the batch was the default for the model's size, which no one chose (buyer trial s50 M6)."""
    requested = e.requested_global_batch_tokens
    sets = "; --global-batch-tokens sets it" if e.batch_defaulted else ""
    if requested is None or requested == e.global_batch_tokens:
        return f" (the default for the model's size{sets})" if e.batch_defaulted else ""
    how = "chosen within --batch-tolerance" if e.batch_varied else "nearest achievable"
    asked = f"the default for the model's size, {requested:,}" if e.batch_defaulted else f"requested {requested:,}"
    return f" ({asked}: {how}, {e.global_batch_tokens / requested - 1:+.1%}{sets})"


def node_fill_words(p: Plan) -> str:
    """'; 5 of each node's 8 GPUs in use' where a plan over several nodes leaves part of each empty
    (plan trial s38 finding 14: 100 GPUs spread as 20 x 5 read as 20 whole nodes; a provider that
    rents whole nodes bills 160 GPUs, which the price line says only where the catalog rents so)."""
    node = default_node(p)
    if node is None or p.num_nodes <= 1 or p.gpus_per_node >= node.gpus_per_node:
        return ""
    return f"; {p.gpus_per_node} of each node's {node.gpus_per_node} GPUs in use"


def default_node(p: Plan) -> NodeTemplate | None:
    """The plan's GPU's default node in the built-in catalog (None: a GPU of a catalog built with
    extra directories, which the plan does not name)."""
    catalog = load_catalog()
    try:
        return catalog.node(catalog.gpu(p.gpu).default_node)
    except ValueError:
        return None


def domain_gpus(p: Plan) -> int:
    """GPUs in one scale-up domain of the plan's nodes (0 where its GPU is not in the built-in catalog)."""
    node = default_node(p)
    return 0 if node is None else node.scaleup_domain_holding(p.gpus_per_node)


def nvlink_domains(p: Plan) -> int | None:
    """How many NVLink domains a plan's nodes fill where one domain spans several nodes (an NVL72
    rack); None where each node is its own (the CLI's line and the app's card, review s30)."""
    domain = domain_gpus(p)
    if domain <= p.gpus_per_node or p.num_nodes <= 1:
        return None
    return -(-p.num_gpus // domain)


def written_line(p: Plan, saved_to: Path) -> str:
    """Where the plan file went and what reads it next: emit runs a feasible plan of trainplan's
    stack (Plan.emittable); explain reads any plan."""
    if not p.emittable:
        what = f"the {p.stack.value} stack" if p.attention is None else f"--attention {p.attention.value}"
        return f"plan written to {saved_to} (an estimate for {what}: trainplan explain reads it, emit does not)"
    if not p.estimate.feasible:
        return f"plan written to {saved_to} (infeasible: emit refuses it without --force; trainplan explain shows why)"
    return f"plan written to {saved_to} (next: trainplan emit {saved_to} --out JOB_DIR)"


def network_words(p: Plan) -> str:
    """' on ib-ndr-400, its default network': the network a plan over several nodes was timed on (trial
    s29b: B300 plans ran on the 400G template unsaid, where an 800G fabric made them 1.5x faster);
    ', one NVLink domain' where its nodes share one, so no ring leaves it (review s29b: 16 GB200
    trays were said to run on the network), and how many domains the network joins where they span
    nodes (trial s30: 144 GB200 did not say they were two NVL72 racks)."""
    domains = nvlink_domains(p)
    if p.network is None and p.num_nodes > 1 and domains == 1:
        return ", one NVLink domain"
    racks = f" in {domains} NVLink domains" if domains is not None and domains > 1 else ""
    if p.network is not None:  # asked for: said, as the app's card says it (review s30)
        return f"{racks} on {p.network}"
    if p.num_nodes <= 1:
        return ""
    try:
        default = load_catalog().gpu(p.gpu).default_network
    except ValueError:  # a GPU of a catalog built with extra directories (the API's load_catalog)
        return ""
    return f"{racks} on {default}, its default network"


def loss_note(e) -> str:
    """'; loss over the whole micro-batch's logits, 12 B each' or 'over 1,024-token chunks': the
    stack's loss as counted (trial s36: HF Trainer's full fp32 logits were nowhere in the output)."""
    chunk, per_logit = e.memory.loss_chunk_tokens, e.memory.loss_bytes_per_logit
    if chunk is None or per_logit is None:
        return ""
    over = f"{chunk:,}-token chunks" if chunk else "the whole micro-batch's logits"
    return f"; loss over {over}, {per_logit:g} B a logit"


def window_words(p: Plan) -> str:
    """', 15 of 18 layers windowed (512 tokens)', once, where the model has sliding-window layers,
    and what their kernel computes beyond the window where it does: transformers' SDPA path the
    whole masked square, trainplan's band its tiles (trial s52: neither was said)."""
    w = windowed_layers(p)
    if w is None:
        return ""
    words = f", {w.layers} of {w.total} layers windowed ({w.window_tokens:,} tokens)"
    extra = w.extra_gflop_per_token
    if not extra:
        return words
    if w.by_sdpa:
        return f"{words}: SDPA computes their whole masked square (+{extra:.2f} GFLOP/token, in HFU)"
    return f"{words}: the banded kernel computes {extra:.2f} GFLOP/token beyond the windows (in HFU)"

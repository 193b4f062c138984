"""The app's cached calls of the planner API (``st.cache_data`` on the request's JSON).

A rerun that does not change the request (a language switch, a tab, a sort) costs milliseconds;
the scored candidate table is a shared read-only resource.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from planner.api import PlanRequest, build_plan
from planner.api.chart_points import Limits, judges_memory, judging_risk
from planner.api.explore import WhyNot, best_per_count, pareto_front, scored_search, why_not_answer
from planner.catalog import detect
from planner.catalog.calibration import AppliedCalibration
from planner.catalog.detect import NoGPUDriver
from planner.catalog.hardware import Catalog, load_catalog
from planner.layout import Layout, TrainingConfig
from planner.model.attention_kernels import AttentionKernel
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision
from planner.model.run_loss_inputs import DEFAULT_RUN_LOSSES, RunLossInputs
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.plan import Plan
from planner.search.ownership import TcoAssumptions
from planner.stack_rules import RunChoices
from planner.units import GIB
from ui import app_core, app_fleet, app_jobs, app_portfolio
from ui.calibration_upload import Calibrated, CalibrationUpload, calibrated_from_upload
from ui.reasons import Refusal, refusal


@st.cache_resource(show_spinner=False)
def catalog() -> Catalog:
    return load_catalog()


def settings_for(headroom: float, stack: Stack = Stack.TRAINPLAN) -> ModelingSettings:
    """The stack's profile (what planner.api uses for ``--stack``) with the sidebar's memory headroom."""
    return STACK_SETTINGS[stack].but(memory_headroom=headroom)


def cuda_context_gib(headroom: float, stack: Stack = Stack.TRAINPLAN) -> float:
    """The CUDA context the memory charts and the explorer's fit line add to each GPU (GiB)."""
    return settings_for(headroom, stack).cuda_context_bytes / GIB


@st.cache_resource(max_entries=8, show_spinner=False)
def cached_calibration(upload: CalibrationUpload) -> Calibrated:
    """The catalog with an uploaded calibration file merged over it (a refusal is not cached)."""
    return calibrated_from_upload(upload, catalog())


def catalog_for(calibration: CalibrationUpload | None) -> Catalog:
    """The catalog the planner prices and times with: calibrated when a file is given."""
    return catalog() if calibration is None else cached_calibration(calibration).catalog


def calibration_for(calibration: CalibrationUpload | None) -> AppliedCalibration | None:
    """The calibrated catalog with the file's record, for the answers that are plans (plan.json
    downloads record the file); None without a file."""
    return None if calibration is None else cached_calibration(calibration).applied


@st.cache_data(max_entries=64, show_spinner=False)
def cached_plan(
    request_json: str, headroom: float, calibration: CalibrationUpload | None = None
) -> app_core.PlanOutcome:
    request = PlanRequest.model_validate_json(request_json)
    applied = calibration_for(calibration)
    catalog_ = None if applied is not None else catalog()
    return app_core.solve(request, settings_for(headroom, request.stack), catalog_, applied)


@st.cache_resource(max_entries=8, show_spinner=False)
def cached_search(request_json: str, headroom: float, calibration: CalibrationUpload | None = None) -> pd.DataFrame:
    """Every valid candidate (read-only: shared between sessions)."""
    request = PlanRequest.model_validate_json(request_json)
    settings = settings_for(headroom, request.stack)
    return scored_search(request, catalog=catalog_for(calibration), settings=settings).frame


@st.cache_data(max_entries=64, show_spinner=False)
def cached_frontier(
    request_json: str, headroom: float, objective: str, calibration: CalibrationUpload | None = None
) -> pd.DataFrame:
    frame = cached_search(request_json, headroom, calibration)
    return frontier_points(frame, PlanRequest.model_validate_json(request_json), objective)


def frontier_points(frame: pd.DataFrame, request: PlanRequest, objective: str) -> pd.DataFrame:
    """The frontier's points: each (GPU type, count)'s best layout and the front, ordered as the search
    judges. At --risk p80 / p90 the layouts that surely fit first, where one meets the request's limits
    (``judging_risk``, recorded per point as ``sure_first`` for the knee and the scaling lines)."""
    judging = judging_risk(frame, request.risk, Limits.of(request).feasible(frame))
    points = best_per_count(frame, "time" if objective == "time" else "cost", judging)
    return points.assign(pareto=pareto_front(points, judging), sure_first=judges_memory(judging))


@st.cache_data(max_entries=128, show_spinner=False)
def cached_why_not(
    request_json: str, headroom: float, gpu: str, calibration: CalibrationUpload | None = None
) -> WhyNot:
    request = PlanRequest.model_validate_json(request_json)
    settings = settings_for(headroom, request.stack)
    return why_not_answer(request, gpu, catalog=catalog_for(calibration), settings=settings)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_job_zip(plan_json: str, name: str, steps: int) -> bytes:
    return app_jobs.emit_job_zip(Plan.model_validate_json(plan_json), name, steps)


def portfolio_requests(jobs: tuple[tuple[str, str], ...], stack: Stack, network: str | None) -> dict[str, PlanRequest]:
    """Each job's request on the sidebar's stack and network, validated again (review s26: a copy
    kept the modules its own stack had resolved, Hugging Face's under megatron-core): the app sets
    no --impl, so the stack's own; each job's run choices as far as the stack offers them (review s40:
    a job added with Megatron-Core's optimizer formats raised a traceback under another stack)."""
    requests = {}
    for name, text in jobs:
        stored = PlanRequest.model_validate_json(text)
        kept = RunChoices(
            stored.partition_activations, stored.moe_a2a_overlap, stored.optimizer_precision, stored.tp_comm_overlap
        ).kept_under(stack)
        update: dict[str, object] = {"stack": stack, "network": network, "impl": None}
        update |= {"partition_activations": kept.partition_activations, "moe_a2a_overlap": kept.moe_a2a_overlap}
        update["optimizer_precision"] = kept.optimizer.model_dump()
        update["tp_comm_overlap"] = kept.tp_comm_overlap
        requests[name] = PlanRequest.model_validate({**stored.model_dump(mode="json"), **update})
    return requests


@st.cache_data(max_entries=16, show_spinner=False)
def cached_portfolio(
    jobs: tuple[tuple[str, str], ...],
    inventory: tuple[tuple[str, int], ...],
    objective: str,
    horizon_days: float | None,
    num_slots: int,
    headroom: float,
    stack: Stack = Stack.TRAINPLAN,
    calibration: CalibrationUpload | None = None,
    network: str | None = None,
    rented: frozenset[str] = frozenset(),
    purchases: tuple[tuple[str, float], ...] = (),
    tco: TcoAssumptions | None = None,
    releases: tuple[tuple[str, float], ...] = (),
    after: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> app_portfolio.PortfolioOutcome:
    """Every job estimated for the sidebar's stack (one settings profile for the whole schedule) on
    the sidebar's network (one cluster's inventory); ``rented``: the types without a count."""
    requests = portfolio_requests(jobs, stack, network)
    return app_portfolio.solve_jobs(
        requests,
        dict(inventory),
        objective=objective,
        horizon_days=horizon_days,
        num_slots=num_slots,
        settings=settings_for(headroom, stack),
        catalog=catalog_for(calibration),
        rented=rented,
        purchase_usd=dict(purchases),
        tco=tco,
        calibration=None if (applied := calibration_for(calibration)) is None else applied.record,
        release_days=dict(releases),
        after=dict(after),
    )


@st.cache_data(max_entries=16, show_spinner=False)
def cached_fleet(
    jobs: tuple[tuple[str, str], ...],
    ask: app_fleet.FleetAsk,
    headroom: float,
    stack: Stack = Stack.TRAINPLAN,
    calibration: CalibrationUpload | None = None,
    network: str | None = None,
) -> app_fleet.FleetOutcome:
    """Rent vs buy for the portfolio's jobs (``app_fleet.solve_fleet``), each estimated for the
    sidebar's stack on its network, as ``cached_portfolio``'s."""
    return app_fleet.solve_fleet(
        portfolio_requests(jobs, stack, network),
        ask,
        settings=settings_for(headroom, stack),
        catalog=catalog_for(calibration),
        calibration=None if (applied := calibration_for(calibration)) is None else applied.record,
    )


@st.cache_resource(ttl=60, show_spinner=False)
def cached_detect() -> list | str:
    """Local GPUs, or the one-line reason there are none."""
    try:
        found = detect.detect_gpus(catalog())  # looked up on each call: tests fake it
    except NoGPUDriver as exc:
        return str(exc)
    return found or "NVML found no GPUs"


@dataclass(frozen=True)
class ExplorerPricing:
    """What the sidebar's request sets beside the layout: the price (an override, the owned rate
    when buying, or the offer kind, e.g. spot), the attention kernel, activation partitioning and
    the all-to-all overlap, the optimizer's formats, the user's run-loss figures.
    The explorer passes them so that "Start from the chosen plan" shows the card's figures (trial
    s25: it priced on demand under spot and timed the stack's kernel under flash3)."""

    price: float | None = None
    price_kind: str | None = None
    attention: AttentionKernel | None = None
    partition_activations: bool = False
    moe_a2a_overlap: bool = False
    tp_comm_overlap: bool = True  # Megatron-Core's --tp-comm-overlap kept (its recipes')
    optimizer_precision: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION
    run_losses: RunLossInputs = DEFAULT_RUN_LOSSES  # the goodput, so the time and cost, rest on them


@st.cache_data(max_entries=64, show_spinner=False)
def cached_layout_plan(
    model_json: str,
    gpu: str,
    layout_json: str,
    training_json: str,
    num_gpus: int,
    tokens: float,
    headroom: float,
    stack: Stack = Stack.TRAINPLAN,
    calibration: CalibrationUpload | None = None,
    network: str | None = None,
    pricing: ExplorerPricing = ExplorerPricing(),
) -> Plan | Refusal:
    """``build_plan`` of one fixed configuration (the layout explorer), or why it cannot exist: the
    planner's line with its rule's code and figures (a Refusal pickles, as st.cache_data needs)."""
    applied = calibration_for(calibration)
    try:
        return build_plan(
            ModelSpec.model_validate_json(model_json),
            gpu,
            Layout.model_validate_json(layout_json),
            TrainingConfig.model_validate_json(training_json),
            num_gpus=num_gpus,
            training_tokens=tokens,
            price=pricing.price,
            price_kind=pricing.price_kind,
            catalog=None if applied is not None else catalog(),
            calibration=applied,
            settings=settings_for(headroom, stack),
            stack=stack,
            attention=pricing.attention,
            partition_activations=pricing.partition_activations,
            moe_a2a_overlap=pricing.moe_a2a_overlap,
            tp_comm_overlap=pricing.tp_comm_overlap,
            optimizer_precision=pricing.optimizer_precision,
            run_losses=pricing.run_losses,
            network=network,
        )
    except ValueError as exc:
        return refusal(exc)

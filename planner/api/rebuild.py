"""Re-estimates of a saved plan: for another stack, catalog or calibration (``restack``: explain
--stack, emit), and after the trainer's probe measured more memory than predicted (``replan``).
Each keeps the plan's GPU type, count and token budget and prices it as it was priced."""

from __future__ import annotations

from dataclasses import replace

from planner.api import build_plan, plan_from_row
from planner.api.wrap import PriceProvenance
from planner.catalog.calibration import AppliedCalibration
from planner.catalog.hardware import Catalog, load_catalog
from planner.catalog.networks import catalog_on_network
from planner.catalog.prices import PRICE_KINDS
from planner.model.run_loss_inputs import RunLossInputs
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.model.stacks import Stack
from planner.plan import Plan
from planner.reports import ReplanRequest
from planner.request import PlanRequest, priced_catalog
from planner.search.ilp import Objective, solve_single
from planner.search.score import candidate_table, search_space
from planner.search.space import build_candidates
from planner.stack_rules import RunChoices

__all__ = ["OOM_CORRECTION", "price_args", "replan", "restack", "with_price_basis"]


def restack(
    plan_: Plan,
    stack: Stack,
    *,
    catalog: Catalog | None = None,
    settings: ModelingSettings | None = None,
    calibration: AppliedCalibration | None = None,
    run_losses: RunLossInputs | None = None,
) -> Plan:
    """The same configuration estimated for another software stack, catalog, calibration, settings
    or run-loss figures (``explain --stack``, ``--calibration``, ``--failure-rate-x``...; emit, when a
    run setting changes what the planner modelled). ``settings`` None: the profile of ``stack``;
    ``run_losses`` None: the plan's own (given: these replace the plan's where set). Unchanged when
    none differs; otherwise the new plan records ``calibration`` (None: none, whatever ``plan_``
    was made with)."""
    if stack == plan_.stack and catalog is None and settings is None and calibration is None and run_losses is None:
        return plan_
    # The target stack's own modules, and no torch.compile where it has none (review s26: explain
    # --stack megatron-core of a hf-trainer plan was refused "drop --impl hf", a flag explain lacks).
    training = plan_.training.model_copy(
        update={"impl": stack.modules or plan_.training.impl, "compile": plan_.training.compile and stack.compiles}
    )
    kept = RunChoices(
        plan_.partition_activations, plan_.moe_a2a_overlap, plan_.optimizer_precision, plan_.tp_comm_overlap
    ).kept_under(Stack(stack))
    again = build_plan(
        plan_.model,
        plan_.gpu,
        plan_.layout,
        training,
        num_gpus=plan_.num_gpus,
        num_nodes=plan_.num_nodes,
        training_tokens=plan_.training_tokens,
        **price_args(plan_),
        hf_config_path=plan_.hf_config_path,
        catalog=catalog,
        requested_global_batch_tokens=plan_.estimate.requested_global_batch_tokens,
        stack=stack,
        settings=settings,
        calibration=calibration,
        attention=plan_.attention,
        # Another stack has no such checkpointing, schedule or formats: its estimate keeps its own
        # (``dropped_choices`` says which went).
        partition_activations=kept.partition_activations,
        moe_a2a_overlap=kept.moe_a2a_overlap,
        tp_comm_overlap=kept.tp_comm_overlap,
        optimizer_precision=kept.optimizer,
        run_losses=plan_.run_losses.but(run_losses),  # the user's figures hold whatever the stack
        network=plan_.network,
    )
    return with_price_basis(again, plan_)


def dropped_choices(before: Plan, after: Plan) -> tuple[str, ...]:
    """The run choices a restacked plan lost because its new stack does not offer them, as warnings
    (trial s40: explain --stack megatron-lm dropped --precision-aware-optimizer unsaid, and the plan
    no longer fit)."""
    flags = (
        ("--partition-activations", before.partition_activations, after.partition_activations),
        ("--moe-a2a-overlap", before.moe_a2a_overlap, after.moe_a2a_overlap),
        ("--no-tp-comm-overlap", before.tp_overlap_off, after.tp_overlap_off),
        (
            "--grad-reduce-in-bf16",
            before.optimizer_precision.grad_reduce_bf16,
            after.optimizer_precision.grad_reduce_bf16,
        ),
        (
            "--precision-aware-optimizer",
            before.optimizer_precision.param_remainders,
            after.optimizer_precision.param_remainders,
        ),
        ("--pure-bf16", before.optimizer_precision.pure_bf16, after.optimizer_precision.pure_bf16),
    )
    return tuple(
        f"the plan's {flag} is dropped: {after.stack.value} does not offer it (estimated without it)"
        for flag, was, now in flags
        if was and not now
    )


def price_args(plan_: Plan) -> dict:
    """How a re-estimate of ``plan_`` is priced as the plan was: its price kind's offers again (their
    whole-node billing and spot interruptions with them), else its own price per GPU-hour, under
    the kind it was given with (a spot quote keeps spot's interruptions: review s29b)."""
    basis, term = plan_.price_basis, plan_.estimate.term
    # a reserved term billed as the plan billed it (None: by the hour, as a portfolio's job was)
    filled = {"term_filled": None if term is None else term.filled}
    if basis is not None and basis.value in PRICE_KINDS:
        return {"price_kind": basis.value, **filled}
    if plan_.price_kind is None:
        return {"price": plan_.price_per_gpu_hour_usd, **filled}
    return {"price": plan_.price_per_gpu_hour_usd, "price_kind": plan_.price_kind, **filled}


def with_price_basis(again: Plan, plan_: Plan) -> Plan:
    """``again`` priced by ``price_args``, with ``plan_``'s ``PriceProvenance`` (basis, offers, kind):
    a price passed on as a price would read as the user's own."""
    if "price" not in price_args(plan_):
        return again
    return again.model_copy(update=PriceProvenance.of_plan(plan_)._asdict())


def on_plan_nodes(catalog: Catalog, plan_: Plan) -> Catalog:
    """The catalog with the plan's GPU on nodes of the plan's size, so the search, which places
    whole nodes, holds a plan of partly filled nodes (12 GPUs on 2 of 6: review s27, its replan
    found no rows); their scale-up domain holds only the GPUs placed on each node, as an estimate's."""
    gpu = catalog.gpu(plan_.gpu)
    node = catalog.node(gpu.default_node)
    if plan_.gpus_per_node == node.gpus_per_node:
        return catalog
    domain = node.scaleup_domain_holding(plan_.gpus_per_node)
    share = node.model_copy(update={"gpus_per_node": plan_.gpus_per_node, "scaleup_domain_size": domain})
    return catalog.model_copy(
        update={
            "gpus": {**catalog.gpus, gpu.id: gpu.model_copy(update={"scaleup_domain_size": domain})},
            "nodes": {**catalog.nodes, node.id: share},
        }
    )


OOM_CORRECTION = 1.5  # assumed under-prediction when the probe ran out of memory before measuring


def replan(
    plan_: Plan,
    memory_correction: float | ReplanRequest,
    *,
    catalog: Catalog | None = None,
    settings: ModelingSettings = DEFAULT_SETTINGS,
) -> Plan:
    """Re-solve a plan after a probe measured ``memory_correction`` x the predicted memory.

    ``memory_correction`` is a factor or the trainer's ``replan_needed.json`` (a ReplanRequest). Keeps the
    GPU type, count and token budget; inflates every memory prediction by the measured factor
    (through a larger headroom) so the chosen layout leaves room for it.
    """
    if isinstance(memory_correction, ReplanRequest):
        memory_correction = memory_correction.memory_correction or OOM_CORRECTION
    if not memory_correction > 0:
        raise ValueError(f"memory correction must be > 0, got {memory_correction}")
    headroom = 1 - (1 - settings.memory_headroom) / max(memory_correction, 1.0)
    # the plan's own run-loss figures too: the replanned job's goodput rests on the same word
    corrected = plan_.run_losses.applied(settings.but(memory_headroom=min(headroom, 0.95), term=plan_.estimate.term))
    priced = price_args(plan_)  # review s26: a replanned job lost its price (--price, --price-kind)
    request = PlanRequest(
        model=plan_.model,
        hf_config_path=plan_.hf_config_path,
        training_tokens=plan_.training_tokens or 1e9,
        gpus={plan_.gpu: plan_.num_gpus},
        seq_len=plan_.training.seq_len,
        global_batch_tokens=plan_.estimate.global_batch_tokens,
        precision=plan_.training.precision,
        impl=plan_.training.impl,
        compile=plan_.training.compile,
        max_gpus=plan_.num_gpus,
        objective=Objective.TIME,
        top_k=0,
        network=plan_.network,
        run_losses=plan_.run_losses,
        # the kind its offers are listed under (a spot plan replanned listed on-demand offers, kind None)
        price_kind=priced.get("price_kind"),
    )
    space = replace(search_space(request), min_gpus=plan_.num_gpus)
    catalog = on_plan_nodes(catalog_on_network(catalog or load_catalog(), plan_.network), plan_)
    own = {} if priced.get("price") is None else {plan_.gpu: priced["price"]}
    catalog = priced_catalog(catalog, priced.get("price_kind"), [plan_.gpu], own, settings)
    c = build_candidates(request.model, catalog, {plan_.gpu: plan_.num_gpus}, space)
    table = candidate_table(request.model, c, [plan_.gpu], space, request.training_tokens, corrected)
    solution = solve_single(
        table,
        Objective.TIME,
        inventory={plan_.gpu: plan_.num_gpus},
        top_k=0,
        batch_target=plan_.estimate.global_batch_tokens,
    )
    replanned = with_price_basis(plan_from_row(request, c, solution.row, [plan_.gpu], catalog, corrected), plan_)
    requested = plan_.estimate.requested_global_batch_tokens  # what the first plan was asked for
    if requested is None:
        return replanned
    estimate_ = replanned.estimate.model_copy(update={"requested_global_batch_tokens": requested})
    return replanned.model_copy(update={"estimate": estimate_})

"""One configuration's checks, shared by the estimate, a plan file's re-check and the trainer's
probe: its one-row candidate table on the catalog's network (``catalog_row``), the structural
rules' inputs (``rule_values``), the first rule it breaks (``check_divisible``,
``structural_problem``) and whether a foreign stack refuses it (``refused_by``)."""

from __future__ import annotations

import numpy as np

from planner.catalog.hardware import Catalog, GPUSpec
from planner.errors import RuleCode, RuleViolation
from planner.layout import Layout, TrainingConfig
from planner.model.candidates import IMPL_HF, PREC_FP8, SCHED_1F1B, Candidates, network_columns, single
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.model.structure import first_structural_problem, first_structural_violation
from planner.plan import Plan


def rule_values(c: Candidates) -> dict:
    """The candidate columns the structural rules (planner/model/structure.py) read."""
    return dict(
        tp=c.tp,
        pp=c.pp,
        cp=c.cp,
        seq_len=c.seq_len,
        grad_accum=c.grad_accum,
        scaleup_domain_size=c.scaleup_domain_size,
        hf=c.impl == IMPL_HF,
        fp8=c.precision == PREC_FP8,
        one_f_one_b=c.pp_schedule == SCHED_1F1B,
        vpp=c.vpp,
        shard_group=c.shard_group,
        ep=c.ep,
    )


def refused_by(stack: Stack, model: ModelSpec, layout: Layout, training: TrainingConfig) -> bool:
    """Whether ``stack`` refuses the layout (``Stack.refusals``, the rule the search filters by)."""
    refused = stack.layout_refusals(
        layout, model.num_layers, training.grad_accum, training.offload, training.activation_checkpointing
    )
    return bool(refused.any())


def checked_configuration(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: Layout,
    training: TrainingConfig,
    num_gpus: int,
    gpus_per_node: int,
    catalog: Catalog,
    trainer_rules: bool,
) -> tuple[Layout, Candidates]:
    """The resolved layout and one-row table of a configuration that passes every rule an estimate
    checks (degrees multiply to the world size, ``first_structural_violation``, the precision); the
    same rules re-check a plan file on read (``Plan.check``). ValueError naming the first broken."""
    resolved = layout.resolve(num_gpus)
    c = catalog_row(gpu, resolved, training, catalog, gpus_per_node=gpus_per_node, num_gpus=num_gpus)
    check_divisible(model, c, training, gpu, trainer_rules)
    return resolved, c


def structural_problem(plan: Plan, layout: Layout, catalog: Catalog) -> str | None:
    """The first structural rule a run of ``plan`` breaks with ``layout`` (resolved for the run's
    world size, its overrides applied), in English, or None: ``rule_values`` of the run's one row,
    the same columns the search judges (the trainer's check before anything is allocated)."""
    c = catalog_row(catalog.gpu(plan.gpu), layout, plan.training, catalog, gpus_per_node=plan.gpus_per_node)
    return first_structural_problem(plan.model, **rule_values(c))


def catalog_row(
    gpu: GPUSpec,
    layout: Layout,
    training: TrainingConfig,
    catalog: Catalog,
    *,
    gpus_per_node: int,
    num_gpus: int | None = None,
) -> Candidates:
    """``single``'s one-row table on ``gpu`` over its catalog network (a resolved ``layout``), its
    scale-up domain holding only the GPUs placed on each node (``NodeTemplate.scaleup_domain_holding``)."""
    network = catalog.network(gpu.default_network)
    domain = catalog.node(gpu.default_node).scaleup_domain_holding(gpus_per_node)
    if domain != gpu.scaleup_domain_size:
        gpu = gpu.model_copy(update={"scaleup_domain_size": domain})
    return single(
        gpu,
        layout,
        training,
        gpus_per_node=gpus_per_node,
        num_gpus=num_gpus,
        **network_columns(network),
    )


def check_divisible(
    model: ModelSpec, c: Candidates, training: TrainingConfig, gpu: GPUSpec, trainer_rules: bool = True
) -> None:
    """Name the first structural problem of a single configuration (RuleViolation, a ValueError)."""
    problem = first_structural_violation(model, **rule_values(c), trainer=trainer_rules)
    if problem is None and not np.isfinite(c.matmul_peak_flops[0]):
        problem = RuleViolation(RuleCode.PRECISION, {"gpu": gpu.id, "precision": training.precision.value})
    if problem is not None:
        raise problem

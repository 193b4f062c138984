"""``trainplan portfolio`` and ``trainplan fleet``: several jobs on one inventory, and what to buy.

Registered on the shared Typer app by ui/cli.py (which keeps the error mapping of ``main``); thin
like the other commands: parse, call, render.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer
from rich.markup import escape

from planner.catalog.hardware import Catalog
from planner.errors import InfeasiblePlan
from planner.limits import MAX_PURCHASE_USD, MIN_FLEET_SLOTS
from planner.model.stacks import Stack
from planner.request import PlanRequest
from ui import render, render_fleet, render_portfolio
from ui.calibration import choose_and_apply
from ui.cli_options import (
    CALIBRATION_HELP,
    EMIT_DIR,
    JSON,
    K8S_IMAGE,
    K8S_PVC,
    NO_CALIBRATION,
    K8sNames,
    k8s_names,
)
from ui.cluster_flags import PortfolioCluster, with_portfolio_cluster_flags
from ui.inputs import check_range
from ui.jobs_overrides import FLEET_OVERRIDES, PORTFOLIO_OVERRIDES, Overrides, apply_overrides, with_override_flags
from ui.portfolio_file import JobsFile, job_keys_help
from ui.render_lines import jobs_figures_lines, jobs_run_losses_json
from ui.render_ownership import OwnedBasis

# What fleet reads no budget from: it sizes what to own, and a budget bounds the cost a portfolio
# reports for a job on its inventory. The help says so where it lists the keys (practitioner s47: the help
# listed budget_usd among fleet's keys, and only a warning after the solve said it was ignored).
FLEET_IGNORED_JOB_KEY = "budget_usd"


def calibrated_catalog(applied) -> Catalog:
    """The catalog the jobs are planned on: a calibration file's (``--calibration``, or the default
    file; an AppliedCalibration) merged over the built-in one, as plan and estimate apply it (trial
    s38: portfolio and fleet ignored it, and their emitted jobs carried uncalibrated predictions)."""
    from planner.catalog.hardware import load_catalog

    return load_catalog() if applied is None else applied.catalog


def no_answer(
    exc: InfeasiblePlan,
    requests: dict[str, PlanRequest],
    *,
    as_json: bool,
    calibration,
    answer_keys: tuple[str, ...],
    overrides: Overrides,
) -> None:
    """portfolio's or fleet's infeasible answer with the jobs file's run-loss figures its days rest on,
    in words where it set any and in --json's "run_losses" (trial s48: plan's answer carried them, these not),
    and the keys the command line set (``overrides``), first as in a found answer."""
    losses = {name: request.run_losses for name, request in requests.items()}
    known = {"run_losses": jobs_run_losses_json(losses), "overrides": overrides.json()}
    if not as_json and (line := overrides.line()) is not None:
        render.out.print(line, markup=False)
    render.infeasible(exc, as_json=as_json, calibration=calibration, answer_keys=answer_keys, known=known)
    for line in () if as_json else jobs_figures_lines(losses):
        render.out.print(line, markup=False)


@with_override_flags(PORTFOLIO_OVERRIDES)
@with_portfolio_cluster_flags
def portfolio(
    jobs_file: Path = typer.Argument(
        ...,
        help=escape(
            f"jobs file (TOML/JSON) with [inventory] and [[jobs]] (examples/portfolio.toml); {job_keys_help()}"
        ),
    ),
    emit_dir: Path | None = EMIT_DIR,
    k8s_image: str | None = K8S_IMAGE,
    k8s_pvc: str | None = K8S_PVC,
    calibration: Path | None = typer.Option(None, help=CALIBRATION_HELP),
    no_calibration: bool = NO_CALIBRATION,
    as_json: bool = JSON,
    cluster: PortfolioCluster | None = None,  # --emit's cluster flags, per GPU type where given so
    overrides: dict | None = None,  # the jobs file keys given as flags (ui/jobs_overrides.py)
) -> None:
    """Size several jobs at once on one shared GPU inventory."""
    from planner.api.explore import held_purchase_prices, plan_portfolio
    from planner.api.held_prices import portfolio_held_prices
    from planner.api.portfolio import late_at_band_ends
    from ui.portfolio_file import file_requests, job_after, past_horizon, release_days

    k8s = k8s_names(k8s_image, k8s_pvc)  # review s27: only emit took them
    spec, overridden = apply_overrides(portfolio_spec(jobs_file, emit_dir, k8s, cluster), overrides or {}, jobs_file)
    chosen, applied = choose_and_apply(calibration, no_calibration)
    catalog = calibrated_catalog(applied)
    rented, dropped = portfolio_rented(spec, jobs_file)
    requests = file_requests(spec, {g: n for g, n in spec.inventory.items()}, jobs_file)
    slots: dict = {} if spec.num_slots is None else {"num_slots": spec.num_slots}  # else plan_portfolio's
    given = {g: usd for g, usd in spec.purchase_usd.items() if usd is not None}
    try:
        with render.working(f"planning {len(requests)} jobs", quiet=as_json):
            solution = plan_portfolio(
                requests,
                spec.inventory,
                objective=spec.objective,
                horizon_days=spec.horizon_days,
                catalog=catalog,
                tco=spec.ownership.tco(),
                purchase_usd=given,
                rented=rented,
                wall_power_w=spec.ownership.wall_power_w,
                calibration=None if applied is None else applied.record,
                release_days=release_days(spec),
                after=job_after(spec),
                **slots,
            )
    except InfeasiblePlan as exc:
        for line in (*dropped, *past_horizon(spec)):
            render.warn(line)
        keys = render_portfolio.PORTFOLIO_KEYS
        no_answer(exc, requests, as_json=as_json, calibration=chosen, answer_keys=keys, overrides=overridden)
        return
    emitted = None if emit_dir is None else emitted_jobs(solution, emit_dir, k8s, cluster)
    rents, price_notes = portfolio_held_prices(solution, requests, catalog)
    # the file's own warnings beside the jobs', in --json too (trial s28c: on stderr alone)
    late = late_at_band_ends(solution, {name: r.deadline_days for name, r in requests.items()})  # trial s51 M5
    words = [w.words() for w in (*price_notes, *late)]
    pinned = () if emit_dir is None else unpinned_types(solution, cluster)
    solution = replace(solution, warnings=(*dropped, *past_horizon(spec), *solution.warnings, *words, *pinned))
    prices = held_purchase_prices(catalog, solution.held_types, given)  # those the owned rates are at
    basis = OwnedBasis(prices, spec.ownership.tco()) if prices else None
    render.portfolio(
        solution,
        as_json=as_json,
        emitted=emitted,
        owned_basis=basis,
        calibration=chosen,
        prices=rents,
        overrides=overridden,
    )


def portfolio_spec(jobs_file: Path, emit_dir: Path | None, k8s: K8sNames, cluster: PortfolioCluster | None) -> JobsFile:
    """The jobs file, refused before the solve where it has no inventory, or where ``--emit`` (with
    ``k8s``, its --k8s-image and --k8s-pvc, and ``cluster``, its cluster flags) could not write its jobs."""
    from trainer.job_k8s import check_k8s_names
    from trainer.job_spec import DEFAULT_K8S_IMAGE, DEFAULT_K8S_PVC
    from ui.portfolio_file import check_k8s_job_names, read_jobs_file

    if (k8s or cluster is not None) and emit_dir is None:
        raise ValueError("--k8s-* and --slurm-* set the emitted jobs' scripts: give --emit DIR too")
    check_k8s_names(k8s.get("k8s_image", DEFAULT_K8S_IMAGE), k8s.get("k8s_pvc", DEFAULT_K8S_PVC))  # before the solve
    spec = read_jobs_file(jobs_file)
    if not spec.inventory:
        # trial s33: "needs an [inventory] table" for a file that has one, empty
        raise ValueError(f"{jobs_file}: portfolio needs GPUs in an [inventory] table (gpu-id = count)")
    if emit_dir is not None:
        check_k8s_job_names([job.name for job in spec.jobs], jobs_file)
        foreign = sorted({str(job.stack or spec.stack) for job in spec.jobs} - {Stack.TRAINPLAN.value})
        if foreign:  # another stack's plan is an estimate of that software, not a job trainplan runs
            raise ValueError(f"{jobs_file}: --emit writes trainplan jobs; stack {', '.join(foreign)} is estimate-only")
    return spec


def portfolio_rented(spec: JobsFile, jobs_file: Path) -> tuple[frozenset[str], tuple[str, ...]]:
    """The types the file rents (``rented_types``), and a warning for each of its settings the
    portfolio reads and drops: [ownership].utilisation, a rented type's [purchase_usd] (fleet51 M2:
    said on stderr only, and "at rent while busy" under a reserved kind, which reserves whole terms)."""
    from ui.fleet_inputs import rented_types

    try:
        rented = rented_types(spec)
    except ValueError as exc:
        raise ValueError(f"{jobs_file}: {exc}") from None
    warnings = []
    if spec.ownership.utilisation is not None:  # trial s27: read and dropped without a word
        warnings.append("portfolio costs each owned GPU per busy and idle hour and ignores [ownership].utilisation;"
                        " fleet reports the owned price at it")  # fmt: skip
    unheld = sorted(g for g in rented if g in spec.purchase_usd)  # trial s36: dropped without a word
    if unheld:
        from planner.catalog.terms import RESERVED_TERM_YEARS

        reserved = spec.price_kind is not None and spec.price_kind in RESERVED_TERM_YEARS
        held = f"reserves it for whole {spec.price_kind} terms" if reserved else "prices it at rent while busy"
        warnings.append(f"{', '.join(unheld)} rented: portfolio {held} and ignores its [purchase_usd]")
    return rented, tuple(warnings)


def unpinned_types(solution, cluster: PortfolioCluster | None) -> tuple[str, ...]:
    """The warning of an emitted portfolio whose jobs run on several types with nothing naming a Slurm
    job's type (fleet51 H3; review51 M1: in --json's warnings too), and of per-type values for types no
    job runs on (``PortfolioCluster.unused_types``)."""
    gpus = sorted({a.plan.gpu for a in solution.assignments})
    unused = () if cluster is None else cluster.unused_types(gpus)  # review51 L3
    if len(gpus) < 2 or (cluster is not None and cluster.names_types):
        return unused
    return (
        f"the jobs run on {', '.join(gpus)} and their slurm.sbatch name no GPU type, so Slurm may start one on"
        " another type's nodes: --slurm-gpu-type GPU=TYPE,... (or --slurm-constraint) pins each",
        *unused,
    )


def emitted_jobs(solution, emit_dir: Path, k8s: K8sNames, cluster: PortfolioCluster | None) -> dict[str, Path]:
    """Each job's directory written under ``emit_dir`` (job name -> its job.json), as ``emit`` writes
    one: each job trains its whole token budget, and records the file it was planned with
    (plan_portfolio's calibration); ``k8s`` goes to every job's scripts, ``cluster`` (the cluster
    flags) as each job's GPU type takes them. Every job is checked before any is written: a refusal
    leaves no half-written portfolio (s50: a ``--slurm-time`` too short for the third job's grace
    left the first two on disk)."""
    from trainer.job import EmitFlags, default_steps, emit_job
    from trainer.job_spec import RunSettings

    flags = EmitFlags(out="--emit", force=False)  # fleet51 L2: its refusals offered --out and --force
    if cluster is not None:
        cluster.check_types([a.plan.gpu for a in solution.assignments])

    def emit(a, check_only: bool) -> Path:
        run = RunSettings(steps=default_steps(a.plan))
        settings = None if cluster is None else cluster.for_gpu(a.plan.gpu)
        target = emit_dir / a.job
        return emit_job(
            a.plan, target, name=a.job, run=run, cluster=settings, check_only=check_only, flags=flags, **k8s
        )

    for a in solution.assignments:
        emit(a, check_only=True)
    return {a.job: emit(a, check_only=False) for a in solution.assignments}


def fleet_prices(spec: JobsFile, catalog: Catalog, jobs_file: Path) -> dict[str, float]:
    """The purchase price of each type to buy (the file's, else the catalog's), each in range."""
    from ui.fleet_inputs import purchase_prices

    prices = purchase_prices(spec, catalog)
    for gpu_id, usd in prices.items():
        check_range(f"{jobs_file}: purchase_usd.{gpu_id}", usd, 0, MAX_PURCHASE_USD, low_open=True)
    return prices


def raised_slots(spec: JobsFile) -> tuple[str, ...]:
    """fleet runs at least MIN_FLEET_SLOTS start slots (planner/limits.py);
    a file's or --num-slots' 1 is raised, said (overrides51: the JSON's num_slots alone showed it)."""
    if spec.num_slots is None or spec.num_slots >= MIN_FLEET_SLOTS:
        return ()
    return (f"num_slots {spec.num_slots} raised to {MIN_FLEET_SLOTS}: fleet needs at least two start slots",)


def fleet_ignored(spec: JobsFile, prices: dict[str, float]) -> list[str]:
    """The warnings of what fleet reads in the file and weighs otherwise or ignores (``prices``: the
    types to buy): a rented type to buy, wall power of a type it neither buys nor owns, rent of a type
    it neither buys nor rents, budgets."""
    warnings = []
    both = sorted(set(spec.rented) & set(prices))
    if both:  # review s27: rented was dropped without a word
        # review s44: under a reserved kind the fleet reserves, not rents
        warnings.append(
            f"rented lists {', '.join(both)}, a type to buy: fleet weighs buying it against renting (or reserving) it, as every type to buy"
        )
    powered = sorted(set(spec.ownership.wall_power_w) - set(prices) - set(spec.inventory))  # owned: powered
    if powered:  # trial s36: dropped without a word
        warnings.append(f"fleet buys none of {', '.join(powered)} and ignores its [ownership].wall_power_w")
    unused = sorted(set(spec.rent_usd_per_gpu_hour) - set(prices) - set(spec.rented))
    if unused:  # trial s28c: an H20 quote was dropped without a word
        warnings.append(
            f"fleet plans on the types to buy and to rent and ignores [rent_usd_per_gpu_hour] of"
            f" {', '.join(unused)}; add them to buy or rented to weigh them"
        )
    budgeted = [job.name for job in spec.jobs if job.budget_usd is not None]
    if budgeted:  # fleet sizes what to own; a budget is portfolio's ([inventory] is the GPUs owned: s51 H1)
        warnings.append(
            f"fleet sizes what to buy and ignores {FLEET_IGNORED_JOB_KEY} ({', '.join(budgeted)});"
            " portfolio plans on an inventory"
        )
    return warnings


@with_override_flags(FLEET_OVERRIDES)
def fleet(
    jobs_file: Path = typer.Argument(
        ...,
        help=escape(
            "jobs file (TOML/JSON) with horizon_days, the GPU types to buy"
            " (buy = [...] at catalog prices, or [purchase_usd] with prices) and [[jobs]] (examples/fleet.toml),"
            " and optionally [inventory], the GPUs already owned (their price sunk; fleet sizes what to add);"
            f" {job_keys_help()} ({FLEET_IGNORED_JOB_KEY}: portfolio's; fleet ignores it)"
        ),
    ),
    calibration: Path | None = typer.Option(None, help=CALIBRATION_HELP),
    no_calibration: bool = NO_CALIBRATION,
    as_json: bool = JSON,
    overrides: dict | None = None,  # the jobs file keys given as flags (ui/jobs_overrides.py)
) -> None:
    """Rent (or reserve) vs buy: how many GPUs of each type to own for a set of jobs over a horizon."""
    from planner.api.fleet import plan_fleet
    from ui.fleet_inputs import fleet_options
    from ui.portfolio_file import file_requests, job_after, past_horizon, read_jobs_file, release_days

    spec, overridden = apply_overrides(read_jobs_file(jobs_file), overrides or {}, jobs_file)
    chosen, applied = choose_and_apply(calibration, no_calibration)
    catalog = calibrated_catalog(applied)
    prices = fleet_prices(spec, catalog, jobs_file)
    if not prices or spec.horizon_days is None:
        raise ValueError(f"{jobs_file}: fleet needs horizon_days and GPU types to buy ([purchase_usd] or buy = [...])")
    # the types to buy, and those the file rents only (trial s36: a B200 quote and rented = ["b200"]
    # were ignored, and the urgent job was rented on 1,024 H100): a rented job may run on either
    # and those already owned ([inventory], trial s51 H1), which any job may run on
    requests = file_requests(spec, {g: None for g in [*prices, *spec.rented, *spec.inventory]}, jobs_file)
    # trial s28c: portfolio said past-horizon deadlines, fleet did not; fleet51 M2: in --json too
    said = (*past_horizon(spec), *fleet_ignored(spec, prices), *raised_slots(spec))
    try:
        with render.working(f"sizing the fleet for {len(requests)} jobs", quiet=as_json):
            options = {**fleet_options(spec, catalog), "calibration": None if applied is None else applied.record}
            options |= {"owned": spec.inventory, "rented": frozenset(spec.rented), "release_days": release_days(spec)}
            options["after"] = job_after(spec)
            # trial s27: the file's default of 1 slot was raised to 2, whose coarse grid bought and
            # rented where 12 (plan_fleet's) ran the jobs back to back for 26 % less
            if spec.num_slots is not None:
                options["num_slots"] = max(spec.num_slots, MIN_FLEET_SLOTS)
            solution = plan_fleet(requests, prices, spec.horizon_days, **options)
    except InfeasiblePlan as exc:
        for line in said:
            render.warn(line)
        no_answer(
            exc,
            requests,
            as_json=as_json,
            calibration=chosen,
            answer_keys=render_fleet.FLEET_KEYS,
            overrides=overridden,
        )
        return
    risks = {name: request.risk.value for name, request in requests.items()}
    given = {g for g, usd in spec.purchase_usd.items() if usd is not None}  # else the catalog's estimate
    basis = OwnedBasis({g: (usd, g in given) for g, usd in prices.items()}, spec.ownership.tco())
    render_fleet.fleet(
        replace(solution, request_warnings=said),
        as_json=as_json,
        utilisation=spec.ownership.utilisation,
        risks=risks,
        owned_basis=basis,
        calibration=chosen,
        losses={name: request.run_losses for name, request in requests.items()},
        overrides=overridden,
    )

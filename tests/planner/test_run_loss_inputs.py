"""A user's own run-loss figures (planner/model/run_loss_inputs.py, --failure-rate-x and its
siblings): they move goodput and time-to-train by the amount the goodput formula says, leave
memory and the step alone, and travel with the plan (file, restack, replan, explain)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from planner.api import PlanRequest, build_plan, plan, replan, restack
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.model.goodput import checkpoint_bytes, failure_rates
from planner.model.run_loss_inputs import DEFAULT_RUN_LOSSES, RunLossInputs
from planner.model.settings import DEFAULT_SETTINGS as S
from planner.model.stacks import Stack
from planner.plan import Plan
from planner.units import SECONDS_PER_HOUR

CATALOG = load_catalog()
LLAMA8B = get_preset("llama3-8b")
GPUS, NODES = 64, 8  # h100-sxm on 8-GPU nodes


def estimate_with(losses: RunLossInputs = DEFAULT_RUN_LOSSES, stack: Stack = Stack.TRAINPLAN) -> Plan:
    training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=1)
    return build_plan(
        LLAMA8B, "h100-sxm", Layout(), training, num_gpus=GPUS, training_tokens=1e12, stack=stack, run_losses=losses
    )


BASE = estimate_with()


def test_the_figures_leave_memory_and_the_step_alone():
    every = RunLossInputs(
        failure_rate_x=3,
        checkpoint_write_gb_per_s=5,
        restart_minutes=30,
        data_stall_pct=10,
        eval_pct=2,
        startup_minutes=60,
    )
    p = estimate_with(every)
    assert p.estimate.memory == BASE.estimate.memory
    assert p.estimate.time == BASE.estimate.time and p.estimate.throughput == BASE.estimate.throughput
    assert p.estimate.time_to_train_h is not None and BASE.estimate.time_to_train_h is not None
    assert p.estimate.time_to_train_h > BASE.estimate.time_to_train_h
    assert p.run_losses == every and BASE.run_losses == DEFAULT_RUN_LOSSES


def test_twice_the_failure_rate_halves_the_mttf_and_doubles_the_interruptions_per_hour():
    """MTTF = 1 / (x (n r_gpu + k r_node)): the catalog's H100 and HGX rates, by hand."""
    doubled = estimate_with(RunLossInputs(failure_rate_x=2)).estimate
    gpu_rate = CATALOG.gpu("h100-sxm").failure_rate_per_gpu_hour
    node_rate = CATALOG.node("hgx-8").failure_rate_per_node_hour
    assert gpu_rate is not None and node_rate is not None
    g0, g2 = BASE.estimate.goodput, doubled.goodput
    assert g0 is not None and g2 is not None and g0.mttf_h is not None and g2.mttf_h is not None
    assert g0.mttf_h == pytest.approx(1 / (GPUS * gpu_rate + NODES * node_rate), rel=1e-12)
    assert g2.mttf_h == pytest.approx(g0.mttf_h / 2, rel=1e-12)
    # expected interruptions = wall / MTTF: twice per hour, over a (slightly longer) wall time
    assert g0.expected_interruptions is not None and g2.expected_interruptions is not None
    assert BASE.estimate.time_to_train_h is not None and doubled.time_to_train_h is not None
    longer = doubled.time_to_train_h / BASE.estimate.time_to_train_h
    assert longer > 1
    assert g2.expected_interruptions == pytest.approx(2 * g0.expected_interruptions * longer, rel=1e-9)
    assert g2.goodput_fraction < g0.goodput_fraction


def test_a_five_percent_stall_makes_the_run_five_percent_longer_and_nothing_else():
    """With no evaluation and no start-up (the two other terms of the step factor and the wall),
    W = T s (1 + stall)(1 + write / tau) / survived, and stalls change neither tau nor survived."""
    bare = RunLossInputs(eval_pct=0, startup_minutes=0)
    without = estimate_with(bare).estimate
    stalled = estimate_with(bare.but(RunLossInputs(data_stall_pct=5))).estimate
    assert without.time_to_train_h is not None and stalled.time_to_train_h is not None
    assert stalled.time_to_train_h == pytest.approx(1.05 * without.time_to_train_h, rel=1e-12)
    assert without.goodput is not None and stalled.goodput is not None
    assert stalled.goodput.checkpoint_interval_steps == without.goodput.checkpoint_interval_steps
    assert stalled.goodput.data_stall_fraction == 0.05 and stalled.goodput.evaluation_fraction == 0.0
    # a stall alone keeps the named defaults of the others
    alone = estimate_with(RunLossInputs(data_stall_pct=5)).estimate.goodput
    assert alone is not None
    assert (alone.evaluation_fraction, alone.startup_s) == (S.eval_time_fraction, S.job_startup_s)


def test_the_job_s_own_storage_replaces_gpus_times_the_per_gpu_bandwidth():
    g0 = BASE.estimate.goodput
    g = estimate_with(RunLossInputs(checkpoint_write_gb_per_s=20, restart_minutes=3)).estimate.goodput
    assert g0 is not None and g is not None
    state = checkpoint_bytes(LLAMA8B, S)
    assert g0.checkpoint_write_s == pytest.approx(state / (GPUS * S.checkpoint_bandwidth_bytes_per_s_per_gpu))
    assert g.checkpoint_write_s == pytest.approx(state / 20e9, rel=1e-12)
    assert g.restart_s == pytest.approx(180 + S.restore_over_save * g.checkpoint_write_s, rel=1e-12)


def test_no_failures_at_a_rate_of_zero_but_a_spot_price_still_preempts():
    g = estimate_with(RunLossInputs(failure_rate_x=0)).estimate.goodput
    assert g is not None and g.mttf_h is None and g.checkpoint_interval_min is None
    # of a spot node's rate, the preemptions are the market's: kept at any multiplier
    gpu, node = failure_rates(np.array([1e-5]), np.array([3e-5]), S.but(failure_rate_scale=0.0), np.array([1e-5]))
    assert (gpu[0], node[0]) == (0.0, pytest.approx(1e-5))
    gpu, node = failure_rates(np.array([1e-5]), np.array([3e-5]), S.but(failure_rate_scale=2.0), np.array([1e-5]))
    assert (gpu[0], node[0]) == (pytest.approx(2e-5), pytest.approx(5e-5))


def test_the_plan_file_keeps_them_and_an_older_file_loads_without(tmp_path: Path):
    p = estimate_with(RunLossInputs(failure_rate_x=2, data_stall_pct=5))
    again = Plan.load(p.save(tmp_path / "plan.json"))
    assert again == p
    data = json.loads(p.to_json())
    del data["run_losses"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert Plan.load(tmp_path / "old.json").run_losses == DEFAULT_RUN_LOSSES


def test_restack_and_replan_keep_them_and_explain_s_figures_replace_theirs():
    given = RunLossInputs(failure_rate_x=2, startup_minutes=30)
    p = estimate_with(given)
    other = restack(p, Stack.TORCHTITAN)
    assert other.run_losses == given and other.estimate.goodput is not None
    assert other.estimate.goodput.startup_s == 1800
    assert other.estimate.goodput == estimate_with(given, Stack.TORCHTITAN).estimate.goodput
    told = restack(p, p.stack, run_losses=RunLossInputs(startup_minutes=5, data_stall_pct=1))
    assert told.run_losses == RunLossInputs(failure_rate_x=2, startup_minutes=5, data_stall_pct=1)
    replanned = replan(p, 1.1)
    assert replanned.run_losses == given and replanned.estimate.goodput is not None
    assert replanned.estimate.goodput.startup_s == 1800
    assert replanned.estimate.goodput.mttf_h == pytest.approx(p.estimate.goodput.mttf_h)  # type: ignore[union-attr]


def test_a_search_scores_with_them_and_its_plan_records_them():
    """search() asserts the scalar re-score matches the vectorised one, so the table used them too."""
    given = RunLossInputs(data_stall_pct=5, restart_minutes=3)
    request = PlanRequest(
        model=get_preset("llama3.2-1b"), training_tokens=5e10, gpus={"h100-sxm": 64}, top_k=0, run_losses=given
    )
    result = plan(request)
    assert result.plan.run_losses == given
    g = result.plan.estimate.goodput
    assert g is not None and g.data_stall_fraction == 0.05
    assert g.restart_s == pytest.approx(180 + S.restore_over_save * g.checkpoint_write_s)
    hours = result.plan.estimate.time_to_train_h
    assert hours is not None and hours * SECONDS_PER_HOUR > 0


@pytest.mark.parametrize(
    "bad",
    [
        {"failure_rate_x": -1},
        {"failure_rate_x": 101},
        {"checkpoint_write_gb_per_s": 0},
        {"restart_minutes": float("nan")},
        {"data_stall_pct": 1001},
        {"startup_minutes": float("inf")},
        {"eval_percent": 1},
    ],
)
def test_out_of_range_figures_are_refused(bad):
    with pytest.raises(ValidationError):
        RunLossInputs(**bad)


def test_emit_checkpoints_at_the_interval_the_user_s_figures_give(tmp_path: Path):
    """Four times the failures: Young/Daly's interval sqrt(2 write MTTF) is half as long, and the
    emitted job checkpoints at it (trainer/job.py reads the plan's goodput)."""
    from trainer.job import emit_job
    from trainer.job_spec import JobSpec, RunSettings

    p = estimate_with(RunLossInputs(failure_rate_x=4))
    g, g0 = p.estimate.goodput, BASE.estimate.goodput
    assert g is not None and g0 is not None and g.young_daly_min is not None and g0.young_daly_min is not None
    assert g.young_daly_min == pytest.approx(g0.young_daly_min / 2, rel=1e-9)
    job = JobSpec.model_validate_json(emit_job(p, tmp_path / "j", name="j", run=RunSettings()).read_text())
    assert job.run.checkpoint_every == g.checkpoint_interval_steps != g0.checkpoint_interval_steps

"""Goodput (issue 10 item 5): failures, checkpoints and restarts in time-to-train and cost."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from planner.api import PlanRequest, build_plan, plan, plan_from_row
from planner.api.notices import fixed_cost_warnings
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing as AC
from planner.layout import Layout, TrainingConfig
from planner.model.estimate import estimate
from planner.model.goodput import MIN_GOODPUT, checkpoint_bytes_per_param, goodput
from planner.model.settings import DEFAULT_SETTINGS
from planner.plan import Plan
from planner.search.score import candidate_table, search_space
from planner.search.space import build_candidates
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR
from trainer.job import emit_job
from trainer.job_spec import JobSpec, RunSettings

CATALOG = load_catalog()
LLAMA8B = get_preset("llama3-8b")
LLAMA405B = get_preset("llama3.1-405b")
LLAMA3_RATE = 419 / (16_384 * 54 * 24)  # Llama 3 paper, sec. 3.3.4
# The failure model alone: a restore as fast as the save, none of a run's other losses
# (tests/planner/test_run_losses.py tests those).
FAILURES_ONLY = DEFAULT_SETTINGS.but(
    restore_over_save=1.0,
    eval_time_fraction=0.0,
    data_stall_fraction=0.0,
    straggler_sigma=0.0,
    planned_interruptions_per_node_hour=0.0,
    job_startup_s=0.0,
)


def est(num_gpus=8, gpu="h100-sxm", model=LLAMA8B, settings=FAILURES_ONLY, tokens=1e11, **layout):
    training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=1)
    return estimate(
        model,
        gpu,
        Layout(**layout),
        training,
        num_gpus=num_gpus,
        catalog=CATALOG,
        settings=settings,
        training_tokens=tokens,
    )


def test_young_daly_interval_and_goodput_formula():
    """write = 1 s, MTTF = 10,000 s: tau = sqrt(2 x 1 x 10,000) = 141 s (Young 1974, Daly 2006)."""
    n, mttf, step = 1000, 10_000.0, 1e-3
    settings = FAILURES_ONLY.but(checkpoint_bandwidth_bytes_per_s_per_gpu=1e9, restart_overhead_s=100.0)
    rate = SECONDS_PER_HOUR / (mttf * n)
    g = goodput(np.array([1e7]), np.array([step]), np.array([n]), np.array([rate]), 1e12, settings)
    assert g.mttf_s[0] == pytest.approx(mttf)
    assert g.write_s[0] == pytest.approx(1.0)
    assert g.restart_s[0] == pytest.approx(101.0)
    tau = math.sqrt(2 * 1.0 * mttf)
    assert g.interval_s[0] == pytest.approx(tau, abs=step)
    assert g.interval_steps[0] == round(tau / step)
    expected = (1 - (tau / 2 + 101.0) / mttf) / (1 + 1.0 / tau)
    assert g.fraction[0] == pytest.approx(expected, rel=1e-5)
    assert g.wall_s[0] == pytest.approx(1e7 / expected, rel=1e-5)
    assert g.interruptions[0] == pytest.approx(g.wall_s[0] / mttf)
    # the interval is the optimum of the wasted fraction
    waste = lambda t: 1.0 / t + (t / 2 + 101.0) / mttf  # noqa: E731
    assert waste(tau) < min(waste(tau * 0.8), waste(tau * 1.25))


def test_failures_outpacing_progress_never_finish():
    settings = FAILURES_ONLY.but(restart_overhead_s=4 * SECONDS_PER_HOUR)  # > MTTF of 3.1 h
    g = goodput(np.array([1e6]), np.array([1.0]), np.array([16_384]), np.array([LLAMA3_RATE]), 1e12, settings)
    assert g.fraction[0] == MIN_GOODPUT and g.wall_s[0] == pytest.approx(1e6 / MIN_GOODPUT)


def test_mttf_is_inverse_in_the_gpu_count_and_matches_llama3():
    e8, e64 = est(num_gpus=8), est(num_gpus=64)
    assert e8.goodput is not None and e64.goodput is not None
    assert e8.goodput.mttf_h == pytest.approx(8 * e64.goodput.mttf_h, rel=1e-9)
    assert e8.goodput.mttf_h == pytest.approx(1 / (8 * LLAMA3_RATE), rel=1e-3)  # from the h100-sxm file
    # 366 of the 419 per GPU (h100-sxm.toml), 53 per 8-GPU host (hgx-8.toml)
    assert CATALOG.gpu("h100-sxm").failure_rate_per_gpu_hour == pytest.approx(366 / 419 * LLAMA3_RATE, rel=1e-3)
    assert CATALOG.node("hgx-8").failure_rate_per_node_hour == pytest.approx(8 * 53 / 419 * LLAMA3_RATE, rel=1e-3)
    # a GPU without a catalog rate uses the setting; its node (hgx-8) keeps the catalog's
    a100 = est(gpu="a100-80gb-sxm", settings=FAILURES_ONLY.but(failure_rate_per_gpu_hour=1e-4))
    node_rate = CATALOG.node("hgx-8").failure_rate_per_node_hour
    assert a100.goodput is not None and a100.goodput.mttf_h == pytest.approx(1 / (8 * 1e-4 + node_rate))


def test_smaller_nodes_fail_more_often_per_gpu():
    """Host failures scale with the node count: 64 GPUs in 16 hosts of 4 fail sooner than in 8 of 8."""
    eight = est(num_gpus=64)
    training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=1)
    four = estimate(LLAMA8B, "h100-sxm", Layout(), training, num_gpus=64, num_nodes=16, catalog=CATALOG)
    assert eight.goodput is not None and four.goodput is not None and eight.goodput.mttf_h and four.goodput.mttf_h
    gpu_rate = CATALOG.gpu("h100-sxm").failure_rate_per_gpu_hour
    node_rate = CATALOG.node("hgx-8").failure_rate_per_node_hour
    assert four.goodput.mttf_h == pytest.approx(1 / (64 * gpu_rate + 16 * node_rate))
    assert four.goodput.mttf_h < eight.goodput.mttf_h


def test_checkpoint_write_is_the_state_sharded_over_all_ranks():
    e = est(num_gpus=64)
    assert e.goodput is not None
    state = LLAMA8B.num_params() * checkpoint_bytes_per_param(DEFAULT_SETTINGS)
    assert e.goodput.checkpoint_write_s == pytest.approx(
        state / (64 * DEFAULT_SETTINGS.checkpoint_bandwidth_bytes_per_s_per_gpu)
    )
    assert e.goodput.restart_s == pytest.approx(FAILURES_ONLY.restart_overhead_s + e.goodput.checkpoint_write_s)
    assert e.goodput.checkpoint_interval_steps * e.time.step_s / 60 == pytest.approx(e.goodput.checkpoint_interval_min)


def test_goodput_tends_to_one_as_the_failure_rate_vanishes():
    fractions = []
    for rate in (1e-4, 1e-6, 1e-8, 1e-10):  # mi300x and its amd-oam-8 node have no catalog rate
        rates = FAILURES_ONLY.but(failure_rate_per_gpu_hour=rate, failure_rate_per_node_hour=rate)
        e = est(gpu="mi300x", num_gpus=1024, settings=rates)
        assert e.goodput is not None
        fractions.append(e.goodput.goodput_fraction)
    assert fractions == sorted(fractions) and fractions[-1] > 0.9999
    zero = FAILURES_ONLY.but(failure_rate_per_gpu_hour=0.0, failure_rate_per_node_hour=0.0)
    off = est(gpu="mi300x", num_gpus=1024, settings=zero)
    assert off.goodput is not None and off.goodput.goodput_fraction == 1.0
    assert off.goodput.mttf_h is None and off.goodput.expected_interruptions == 0.0
    assert off.goodput.checkpoint_interval_min is None  # nothing to recover from
    assert off.time_to_train_h == pytest.approx(1e11 / off.throughput.tokens_per_s / SECONDS_PER_HOUR)


def test_lost_time_is_in_time_to_train_and_cost():
    on = est(num_gpus=512)
    same = est(num_gpus=512, settings=FAILURES_ONLY.but(failure_rate_per_gpu_hour=0.0))
    off = est(num_gpus=512, settings=FAILURES_ONLY.but(model_failures=False))
    assert on.goodput is not None and on.time_to_train_h is not None and on.cost_usd is not None
    useful_h = 1e11 / on.throughput.tokens_per_s / SECONDS_PER_HOUR
    assert on.time_to_train_h == pytest.approx(useful_h / on.goodput.goodput_fraction)
    assert on.cost_usd == pytest.approx(on.time_to_train_h * 512 * CATALOG.gpu("h100-sxm").price_per_gpu_hour_usd)
    assert same.time_to_train_h == pytest.approx(on.time_to_train_h)  # h100-sxm's catalog rate wins
    assert off.goodput is not None and off.goodput.goodput_fraction == 1.0
    assert off.time_to_train_h == pytest.approx(useful_h)
    assert on.time_to_train_h > off.time_to_train_h and on.cost_usd > (off.cost_usd or 0)


def test_16k_gpu_405b_run_sees_hundreds_of_interruptions():
    """Llama 3 405B on 16,384 H100: 419 unexpected interruptions in 54 days (Dubey et al. 2024)."""
    e = estimate(
        LLAMA405B,
        "h100-sxm",
        Layout(tp=8, pp=2),
        TrainingConfig(seq_len=8192, micro_batch=1, grad_accum=2, activation_checkpointing=AC.FULL),
        num_gpus=16_384,
        catalog=CATALOG,
        training_tokens=15.6e12,
    )
    g = e.goodput
    assert g is not None and e.time_to_train_h is not None and g.expected_interruptions is not None
    assert e.time_to_train_h * SECONDS_PER_HOUR > 50 * SECONDS_PER_DAY
    assert 100 < g.expected_interruptions < 3000
    assert g.expected_interruptions == pytest.approx(e.time_to_train_h / g.mttf_h)
    assert g.mttf_h == pytest.approx(54 * 24 / 419, rel=1e-3)  # 3.1 h
    assert 0.8 < g.goodput_fraction < 0.97  # Llama 3: "higher than 90% effective training time"
    assert 1 < g.checkpoint_interval_min < 30


def test_vectorised_and_scalar_goodput_agree():
    request = PlanRequest(
        model=get_preset("llama3.2-1b"), training_tokens=5e10, gpus={"h100-sxm": 64, "a100-80gb-sxm": 64}
    )
    space = search_space(request)
    gpus = {"h100-sxm": 64, "a100-80gb-sxm": 64}
    c = build_candidates(request.model, CATALOG, gpus, space)
    table = candidate_table(request.model, c, list(gpus), space, request.training_tokens, DEFAULT_SETTINGS)
    ok = np.flatnonzero(table.fits_memory & table.divisible & np.isfinite(table.time_to_train_s))
    rows = ok[np.linspace(0, len(ok) - 1, 12).astype(int)]
    for row in rows:
        p = plan_from_row(request, c, int(row), list(gpus), CATALOG, DEFAULT_SETTINGS)
        assert p.estimate.time_to_train_h is not None and p.estimate.goodput is not None
        assert p.estimate.goodput.goodput_fraction < 1.0
        assert p.estimate.time_to_train_h * SECONDS_PER_HOUR == pytest.approx(table.time_to_train_s[row], rel=1e-9)
        assert p.estimate.cost_usd == pytest.approx(table.cost_usd[row], rel=1e-9)


def test_plan_json_has_goodput():
    result = plan(PlanRequest(model=get_preset("llama3.2-1b"), training_tokens=5e10, gpus={"h100-sxm": 64}))
    data = json.loads(result.plan.to_json())["estimate"]["goodput"]
    assert {"mttf_h", "expected_interruptions", "checkpoint_interval_min", "goodput_fraction"} <= set(data)


def small_plan() -> Plan:
    training = TrainingConfig(seq_len=1024, micro_batch=1, grad_accum=1)
    return build_plan(get_preset("llama3.2-1b"), "h100-sxm", Layout(), training, num_gpus=8, training_tokens=1e10)


def test_emit_sets_the_checkpoint_interval_from_goodput(tmp_path: Path):
    p = small_plan()
    assert p.estimate.goodput is not None and p.estimate.goodput.checkpoint_interval_steps is not None
    job = JobSpec.model_validate_json(emit_job(p, tmp_path / "a", name="a", run=RunSettings()).read_text())
    assert job.run.checkpoint_every == p.estimate.goodput.checkpoint_interval_steps
    given = JobSpec.model_validate_json(
        emit_job(p, tmp_path / "b", name="b", run=RunSettings(checkpoint_every=7)).read_text()
    )
    assert given.run.checkpoint_every == 7


def test_emit_cli_uses_goodput_unless_checkpoint_every_is_given(tmp_path: Path):
    from typer.testing import CliRunner

    from ui.cli import app

    p = small_plan()
    p.save(tmp_path / "plan.json")
    runner = CliRunner()
    for extra, expected in (([], p.estimate.goodput.checkpoint_interval_steps), (["--checkpoint-every", "9"], 9)):
        out = tmp_path / f"job{len(extra)}"
        result = runner.invoke(app, ["emit", str(tmp_path / "plan.json"), "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
        assert json.loads((out / "job.json").read_text())["run"]["checkpoint_every"] == expected


def test_old_plan_json_without_goodput_loads_and_emits(tmp_path: Path):
    data = json.loads(small_plan().to_json())
    del data["estimate"]["goodput"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = Plan.load(tmp_path / "old.json")
    assert old.estimate.goodput is None
    job = JobSpec.model_validate_json(emit_job(old, tmp_path / "j", name="j", run=RunSettings()).read_text())
    assert job.run.checkpoint_every == RunSettings().checkpoint_every


def test_plan_survives_failure_rates_that_outpace_progress():
    hopeless = DEFAULT_SETTINGS.but(failure_rate_per_gpu_hour=100.0)  # MTTF under a minute
    result = plan(
        PlanRequest(model=get_preset("llama3.2-1b"), training_tokens=1e9, gpus={"a100-80gb-sxm": 16}),
        settings=hopeless,
    )
    g = result.plan.estimate.goodput
    assert g is not None and g.goodput_fraction == MIN_GOODPUT


def test_a_job_shorter_than_its_start_up_is_the_start_up_and_one_checkpoint():
    """Before: the start-up was charged the checkpoint overhead of a one-step run (write / tau
    = 183 x), so 1,000 tokens on 8 H100 took 30.7 hours; now 10 minutes of start-up, one step
    and its checkpoint, and a warning that the fixed costs are the answer."""
    cfg = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=1)
    e = estimate(LLAMA8B, "h100-sxm", Layout(), cfg, num_gpus=8, catalog=CATALOG, training_tokens=1000)
    g = e.goodput
    assert g is not None and e.time_to_train_h is not None and g.checkpoint_interval_steps == 1
    useful_s = 1000 / e.throughput.tokens_per_s
    steps_s = useful_s * (1 + g.evaluation_fraction) * (1 + g.checkpoint_write_s / e.time.step_s)
    assert e.time_to_train_h * SECONDS_PER_HOUR == pytest.approx(g.startup_s + steps_s, rel=0.01)
    p = build_plan(LLAMA8B, "h100-sxm", Layout(), cfg, num_gpus=8, catalog=CATALOG, training_tokens=1000)
    (warning,) = fixed_cost_warnings(p)
    assert warning.startswith("the job trains for 0.5 seconds (1 step of 32,768 tokens): start-up (10.0 minutes)")
    long = build_plan(LLAMA8B, "h100-sxm", Layout(), cfg, num_gpus=8, catalog=CATALOG, training_tokens=1e9)
    assert fixed_cost_warnings(long) == ()


def test_emit_trains_the_plans_token_budget_unless_steps_are_given(tmp_path: Path):
    from typer.testing import CliRunner

    from ui.cli import app

    p = small_plan()  # 1e10 tokens at 8 x 1,024 tokens per step
    assert p.training_steps == math.ceil(1e10 / p.estimate.global_batch_tokens)
    p.save(tmp_path / "plan.json")
    without_budget = p.model_copy(update={"training_tokens": None})
    without_budget.save(tmp_path / "estimate.json")
    runner = CliRunner()
    cases = (("plan.json", [], p.training_steps), ("plan.json", ["--steps", "30"], 30), ("estimate.json", [], 50))
    for i, (plan_file, extra, steps) in enumerate(cases):
        out = tmp_path / f"job{i}"
        result = runner.invoke(app, ["emit", str(tmp_path / plan_file), "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
        run = json.loads((out / "job.json").read_text())["run"]
        assert run["steps"] == steps
        text = " ".join(result.output.split())
        assert f"{steps:,} steps" in text and ("(the plan's 10,000,000,000 tokens)" in text) == (i == 0), text
        assert f"trainplan run {out} --steps 20" in text  # the trial, on the job's own schedule
        # A goodput interval longer than the job: its one checkpoint is the last.
        assert ("so one at the end (or when stopped)" in text) == (run["checkpoint_every"] >= steps), text
    json_out = runner.invoke(app, ["emit", str(tmp_path / "plan.json"), "--out", str(tmp_path / "j"), "--json"])
    assert json.loads(json_out.output)["steps"] == p.training_steps

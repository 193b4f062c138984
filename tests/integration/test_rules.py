"""One of each rule: exit codes, units, text formatting, the TCO formula and the memory fit rule."""

from __future__ import annotations

import ast
import math

import pytest
from pydantic import BaseModel, field_validator
from support import REPO

from planner.api import build_plan
from planner.catalog.models import get_preset
from planner.errors import ExitCode, InfeasiblePlan
from planner.fmt import (
    duration_clock,
    duration_h,
    duration_parts,
    duration_words,
    money,
    money_band,
    money_short,
    number_band,
    one_line,
)
from planner.layout import Layout, TrainingConfig
from planner.model.memory import fits, usable_capacity
from planner.model.settings import DEFAULT_SETTINGS
from planner.search.ownership import GpuEconomics, TcoAssumptions, break_even, ownership_usd
from planner.units import GIB, HOURS_PER_YEAR, SECONDS_PER_DAY, SECONDS_PER_HOUR
from trainer.job import emit_job
from trainer.job_spec import JobSpec, RunSettings, memory_headroom
from trainer.probe import check_memory_fit
from ui import app_core

ROOT = REPO

# --------------------------------------------------------------------------- exit codes and errors


def test_exit_codes_are_unique_and_keep_their_documented_values() -> None:
    values = [member.value for member in ExitCode.__members__.values()]  # aliases would repeat a value
    assert len(values) == len(set(values))
    assert (ExitCode.OK, ExitCode.FAILED, ExitCode.INVALID, ExitCode.REPLAN) == (0, 1, 2, 3)
    assert (ExitCode.DISK_FULL, ExitCode.DIVERGED, ExitCode.ABORTED) == (4, 5, 130)


def test_no_exit_code_literals_left_in_the_entry_points() -> None:
    for path in ("ui/cli.py", "trainer/launch.py", "trainer/train.py", "trainer/torchrun.py"):
        tree = ast.parse((ROOT / path).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant):
                assert not isinstance(node.value.value, int) or isinstance(node.value.value, bool), (
                    f"{path}:{node.lineno}: return ExitCode.<name>, not a literal"
                )


def _imports(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_ilp_and_diagnosis_do_not_import_each_other_both_ways() -> None:
    assert "planner.search.ilp" not in _imports("planner/search/diagnosis.py")
    assert "planner.search.diagnosis" in _imports("planner/search/ilp.py")
    assert "planner.errors" in _imports("planner/search/diagnosis.py")
    # errors.py sits below everything: the standard library and the rule codes (which import only it)
    assert _imports("planner/errors.py") <= {"__future__", "dataclasses", "enum", "planner.rule_codes"}
    assert _imports("planner/rule_codes.py") <= {"__future__", "enum", "collections.abc"}
    assert _imports("planner/fix_codes.py") <= {"__future__", "enum", "collections.abc"}


def test_infeasible_plan_keeps_its_fields_across_pickling() -> None:
    import pickle

    from planner.errors import Constraint

    exc = InfeasiblePlan(Constraint.BUDGET, "costs $2.0M > $1.0M", "raise the budget", required=2e6, available=1e6)
    again = pickle.loads(pickle.dumps(exc))
    assert (again.constraint, again.detail, again.fix) == (Constraint.BUDGET, exc.detail, exc.fix)
    assert (again.required, again.available) == (2e6, 1e6) and str(again) == str(exc)


# --------------------------------------------------------------------------- one_line


class _Job(BaseModel):
    steps: int
    name: str = "x"

    @field_validator("name")
    @classmethod
    def _short(cls, value: str) -> str:
        if len(value) > 3:
            raise ValueError("too long")
        return value


def _validation_error(**fields):
    with pytest.raises(Exception) as caught:
        _Job(**fields)
    return caught.value


def test_one_line_names_the_pydantic_field() -> None:
    error = _validation_error(steps=1, name="long")
    assert one_line(error) == "name: too long"
    assert one_line(error, keep_prefix=True) == "name: Value error, too long"
    assert one_line(error, where=False) == "too long"
    missing = _validation_error()
    assert one_line(missing) == "steps: Field required"
    assert one_line(missing, verbatim=True).startswith("steps: Field required [type=missing")


def test_one_line_of_other_exceptions() -> None:
    assert one_line(ValueError("\n  first line  \nsecond")) == "first line"
    assert one_line(KeyError()) == "KeyError"
    assert one_line(RuntimeError("only line"), verbatim=True) == "only line"


def test_one_line_stands_in_for_an_empty_location() -> None:
    class Root(BaseModel):
        a: int

        @field_validator("a")
        @classmethod
        def _positive(cls, value: int) -> int:
            return value

    with pytest.raises(Exception) as caught:
        Root.model_validate([1])
    assert one_line(caught.value, default_where="file").startswith("file: ")


# --------------------------------------------------------------------------- money and durations


def test_money() -> None:
    assert money(None) == "-"
    assert money(2_500_000) == "$2.50M" and money(12_345.6) == "$12,346" and money(9.349) == "$9"
    assert money(9.349, cents_below=100) == "$9.35" and money(123.4, cents_below=100) == "$123"
    assert app_core.money(9.349) == "$9.35"  # the app keeps its cents
    assert money_short(1_234_567) == "$1.2M" and money_short(2.5e9) == "$2.5B" and money_short(1500) == "$1.5k"
    assert money_short(12.34) == "$12.3" and money_short(1_234_567, 3) == "$1.235M"
    assert money_short(1_201_000, round_up=True) == "$1.3M" and money_short(1_200_000, round_up=True) == "$1.2M"
    # trial s33: "$783,875" over "$2.01M" in one fleet column; a band whose top passes a million
    assert money(783_875, column_max=2.01e6) == "$0.78M" and money(0, column_max=2e6) == "$0"
    assert money(1_234, column_max=1.39e6) == "$1,234"  # review s34: not "$0.00M"
    assert money_band(1_234, (1_000, 1_500), column_max=1.39e6) == "$1,234 ($1,000-$1,500)"
    assert money_band(993_000, (900_000, 1_100_000)) == "$0.99M ($0.90M-$1.10M)"
    assert money_band(51_501, (39_143, 53_873)) == "$51,501 ($39,143-$53,873)"


def test_a_rate_keeps_its_significant_figures() -> None:
    """Trial s34: a CPU-calibrated plan printed "0 (0-0) tokens/s (0/GPU)"."""
    assert number_band(0.0034, (0.0028, 0.0041)) == "0.00340 (0.00280-0.00410)"
    assert number_band(884_987.2, (721_030, 952_431)) == "884,987 (721,030-952,431)"
    assert number_band(12.345, None) == "12.3" and number_band(5.9, (4.5, 6.1), 1) == "5.9 (4.5-6.1)"


def test_durations() -> None:
    assert duration_parts(72.0) == ("days", 3.0) and duration_parts(10.0) == ("hours", 10.0)
    assert duration_parts(0.5, smallest="minutes") == ("minutes", 30.0)
    assert duration_h(None) == "-" and duration_h(30.0) == "30.0 h" and duration_h(72.0) == "3.0 days"
    assert duration_h(24_000.0) == "1,000.0 days"
    assert duration_words(3 * SECONDS_PER_HOUR) == "3.0 hours" and duration_words(90) == "1.5 minutes"
    assert duration_words(2.5 * SECONDS_PER_DAY) == "2.5 days"
    assert duration_words(2.2 * SECONDS_PER_DAY, round_up=True) == "3 days"
    assert duration_words(3 * SECONDS_PER_HOUR, round_up=True) == "3 hours"
    assert duration_words(4975.3 * SECONDS_PER_DAY) == "4,975.3 days"
    assert duration_words(4975.3 * SECONDS_PER_DAY, round_up=True) == "4,976 days"
    assert duration_clock(3723) == "1:02:03" and duration_clock(123.9) == "02:03" and duration_clock(-5) == "00:00"
    assert app_core.duration_key(10.0) == ("hours_value", 10.0) and app_core.duration_key(72.0) == ("days_value", 3.0)


# --------------------------------------------------------------------------- units and the TCO formula


def test_units() -> None:
    assert GIB == 1024**3 and SECONDS_PER_HOUR == 3600 and SECONDS_PER_DAY == 86400
    assert HOURS_PER_YEAR == 8766  # the mean calendar year, 365.25 days


def test_one_tco_formula() -> None:
    tco = TcoAssumptions(lifetime_years=4, residual_fraction=0.2, hosting_usd_per_gpu_month=150)
    # Over one year: a quarter of the depreciation (80 % of the price over 4 years) and 12 months of hosting.
    assert ownership_usd(30_000, tco, HOURS_PER_YEAR) == pytest.approx(30_000 * 0.8 / 4 + 150 * 12)
    assert ownership_usd(30_000, tco, 10.0) == pytest.approx(10 * (6000 + 1800) / HOURS_PER_YEAR)
    # Fleet sizing: fixed cost over the horizon = ownership + idle power.
    economics = GpuEconomics(purchase_usd=30_000, wall_power_w=700)
    result = break_even("h100", economics, tco, 1000.0, 3.0)
    idle = tco.idle_power_fraction * 0.7 * tco.pue * tco.electricity_usd_per_kwh * 1000.0
    assert result.owned_fixed_usd == pytest.approx(ownership_usd(30_000, tco, 1000.0) + idle)
    # The app: the fleet's fixed cost per hour (ownership + idle draw) spread over the busy hours,
    # plus the rest of the draw while busy; at the wall power the fleet is given.
    power = 0.7 * tco.pue * tco.electricity_usd_per_kwh
    idle_share = tco.idle_power_fraction
    price = app_core.amortised_price_per_gpu_hour(30_000, 700, 0.5, tco)
    assert price == pytest.approx(
        (ownership_usd(30_000, tco, 1.0) + idle_share * power) / 0.5 + (1 - idle_share) * power
    )
    assert price == pytest.approx((7800 / HOURS_PER_YEAR + idle_share * power) / 0.5 + (1 - idle_share) * power)


def test_no_hours_per_year_literal_outside_units() -> None:
    for folder in ("planner", "ui", "trainer"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "units.py":
                text = path.read_text()
                assert "8760" not in text and "8766" not in text and "365.25" not in text, path


# --------------------------------------------------------------------------- the memory fit rule


def test_fits_is_capacity_less_headroom() -> None:
    assert fits(95.0, 100.0, 0.05) and not fits(95.1, 100.0, 0.05)
    assert usable_capacity(100.0, 0.1) == pytest.approx(90.0)


def h200_plan(micro_batch: int, headroom: float = DEFAULT_SETTINGS.memory_headroom):
    """llama3.2-3b on one H200 (chunked loss): micro-batch 14 reserves ~132.0 GiB of the 139.8 GiB."""
    return build_plan(
        get_preset("llama3.2-3b"),
        "h200-sxm",
        Layout(dp_shard=1),
        TrainingConfig(seq_len=2048, micro_batch=micro_batch, grad_accum=1),
        num_gpus=1,
        settings=DEFAULT_SETTINGS.but(memory_headroom=headroom),
    )


def trainer_accepts(plan, run: RunSettings) -> bool:
    capacity_gib = plan.estimate.memory.capacity_gib  # the H200's framework-visible memory, as torch reports it
    try:
        check_memory_fit(plan, capacity_gib, memory_headroom(plan, run))
    except ValueError:
        return False
    return True


def test_a_plan_near_the_top_of_h200_memory_passes_the_trainers_static_check(tmp_path) -> None:
    plan = h200_plan(14)
    assert 128 <= plan.estimate.memory.reserved_gib <= 132.5 and plan.estimate.feasible
    # emit carries the planner's headroom into the job, and the trainer checks with it.
    spec = JobSpec.load(emit_job(plan, tmp_path / "job", name="near-top", run=RunSettings()).parent)
    assert spec.run.memory_headroom == plan.estimate.memory.headroom_fraction == DEFAULT_SETTINGS.memory_headroom
    assert trainer_accepts(spec.plan, spec.run)
    # A trainer-side 10 % headroom (the old constant) would refuse what the planner accepted.
    assert not trainer_accepts(spec.plan, RunSettings(memory_headroom=0.1))


def test_a_plan_the_planner_rejects_is_rejected_by_the_trainer(tmp_path) -> None:
    too_big = h200_plan(15)
    assert not too_big.estimate.feasible and not trainer_accepts(too_big, RunSettings())
    # At the boundary: the same configuration with a headroom just too large for it.
    reserved = h200_plan(14).estimate.memory.reserved_gib
    need = reserved + DEFAULT_SETTINGS.cuda_context_bytes / GIB
    boundary = 1 - need / h200_plan(14).estimate.memory.capacity_gib
    for headroom, verdict in ((boundary - 1e-4, True), (boundary + 1e-4, False)):
        plan = h200_plan(14, headroom)
        assert plan.estimate.feasible is verdict
        # emit refuses an infeasible plan unless forced: forced here, to show the trainer refuses it too
        job_json = emit_job(plan, tmp_path / f"job-{verdict}", name="edge", run=RunSettings(), force=not verdict)
        spec = JobSpec.load(job_json.parent)
        assert trainer_accepts(spec.plan, spec.run) is verdict
    with pytest.raises(ValueError, match=r"predicted 137\.\d GiB reserved \+ 0\.6 GiB CUDA context"):
        check_memory_fit(too_big, too_big.estimate.memory.capacity_gib, memory_headroom(too_big, RunSettings()))
    assert math.isclose(memory_headroom(too_big, RunSettings(memory_headroom=0.2)), 0.2)

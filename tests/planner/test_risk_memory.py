"""``--risk p80 / p90`` judge memory too (trial s42 H1: at p90 the search chose a 70B layout whose
reserved peak's band passed the GPU's memory, beside one 3 % dearer that surely fit)."""

from __future__ import annotations

import pytest

from planner.accuracy import Risk
from planner.api import PlanRequest, plan
from planner.catalog.models import get_preset
from planner.model.stacks import Stack


def _plan(risk: Risk, gpus: dict[str, int], tokens: float = 2e12, deadline: float | None = 60):
    request = PlanRequest(
        model=get_preset("llama3-70b"),
        training_tokens=tokens,
        deadline_days=deadline,
        gpus=gpus,
        stack=Stack.MEGATRON_CORE,
        risk=risk,
        top_k=3,
    )
    return plan(request)


def test_p80_and_p90_choose_among_plans_that_fit_at_their_bands_high_end():
    gpus = {"h100-sxm": 512, "h200-sxm": 256}
    median = _plan(Risk.P50, gpus)
    assert median.plan.estimate.may_not_fit  # the model's figure fits, its band's high end does not
    for risk in (Risk.P80, Risk.P90):
        judged = _plan(risk, gpus)
        plans = [judged.plan, *judged.alternatives]
        assert not any(p.estimate.may_not_fit for p in plans)
        assert judged.plan.estimate.memory.reserved_gib < median.plan.estimate.memory.reserved_gib
        assert not any("no plan that fits" in w for w in judged.warnings)


@pytest.mark.parametrize("risk", [Risk.P80, Risk.P90])
def test_where_no_plan_fits_at_its_bands_high_end_the_models_figure_decides_and_says_so(risk, monkeypatch):
    """Every band's high end at 20 x the model's reserved peak: no plan fits there, so the search
    chooses as at the median, by the model's figure, and warns that the plan may not fit."""
    import importlib

    import planner.search.score as score

    memory_band = importlib.import_module("planner.accuracy.memory_band")  # (the package exports a function so named)

    def wide(*args, **kwargs) -> tuple[float, float]:
        return 0.9, 20.0

    monkeypatch.setattr(memory_band, "band_ratios", wide)
    monkeypatch.setattr(score, "band_ratios", wide)
    gpus = {"h100-sxm": 512, "h200-sxm": 256}
    result, median = _plan(risk, gpus), _plan(Risk.P50, gpus)
    assert result.plan.estimate.may_not_fit
    (warning,) = [w for w in result.warnings if "no plan that fits" in w]
    assert warning.startswith(f"--risk {risk.value}: ") and "it may not fit" in warning
    assert not any("no plan that fits" in w for w in median.warnings)


def test_a_layout_that_surely_fits_with_recompute_is_not_pruned_for_a_twin_that_may_not():
    """Review s42 H1: the dominance pruning dropped recompute rows for their ``none`` twins, which at
    p80 may not fit, so a deadline a sure layout meets was answered by the fallback."""
    request = PlanRequest(
        model=get_preset("llama3.1-8b"), training_tokens=1e11, gpus={"h100-sxm": 8}, deadline_days=17.1, top_k=0
    )
    result = plan(request)
    assert not result.plan.estimate.may_not_fit
    assert not any("no plan that fits" in w for w in result.warnings)


def test_fleet_and_portfolio_jobs_read_the_sure_rows():
    """Review s42 H2: fleet's labelled job tables kept the model's rule; both now keep the rows that
    fit at their band's high end where those can do the job."""
    from planner.api.explore import job_candidates
    from planner.catalog.hardware import load_catalog

    request = PlanRequest(
        model=get_preset("llama3.1-8b"), training_tokens=1e11, gpus={"h100-sxm": None}, max_gpus=8, deadline_days=60
    )
    job = job_candidates(request, "a", load_catalog(), None)
    valid = job.table.valid()
    assert valid.any() and not job.table.extra["may_not_fit"][valid].any()
    assert (job.table.label[valid] != "").all()  # still labelled


def test_the_median_line_says_when_memory_set_its_plan_aside():
    """Review s42 M3: the median line ("risk p90 changed the choice ...") was silent where memory,
    not time, changed the choice: the median's plan is read from every row, and the line says it
    may not fit, in the CLI and on the app's card in both languages."""
    from ui.i18n import Labels
    from ui.messages import risk_text
    from ui.render_plan import MEDIAN_MAY_NOT_FIT, risk_line

    result = _plan(Risk.P90, {"h100-sxm": 512, "h200-sxm": 256})
    assert result.median_plan is not None and result.median_plan.estimate.may_not_fit
    assert not result.plan.estimate.may_not_fit
    assert risk_line(result).endswith(MEDIAN_MAY_NOT_FIT)
    for lang in ("en", "zh"):
        tr = Labels(lang)
        assert tr("risk_changed_memory") in risk_text(tr, result)


def test_per_gpu_names_a_types_plan_at_the_models_figure_where_it_has_no_sure_one():
    """Review s42: at p90 `--per-gpu` said "no plan on h100-sxm (memory)", where a search of the
    H100 alone answers with a plan that may not fit; the type now shows that plan."""
    from planner.layout import ActivationCheckpointing
    from planner.model.stacks import Stack

    request = PlanRequest(
        model=get_preset("llama3.2-3b"),
        training_tokens=1e10,
        gpus={"h200-sxm": 8, "h100-sxm": 1},
        activation_checkpointing=(ActivationCheckpointing.SELECTIVE,),
        stack=Stack.TORCHTITAN,
        per_gpu=True,
        risk=Risk.P90,
    )
    result = plan(request)
    assert result.plan.gpu == "h200-sxm" and not result.plan.estimate.may_not_fit
    (h100,) = [p for p in result.per_gpu or () if p.gpu == "h100-sxm"]
    assert h100.estimate.may_not_fit
    assert "h100-sxm" not in {u.gpu for u in result.solution.unplanned_gpus}

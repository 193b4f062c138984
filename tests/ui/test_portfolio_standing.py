"""Review s32: the portfolio table said 'validated' for a plan its card calls not independently
validated (the regime's measured rows also set the ceiling it is held at). One ``Standing`` per
estimate (planner/plan.py) is worded by the CLI's table, its JSON and the app's table."""

from __future__ import annotations

import pandas as pd
import pytest
from support.app import EN, ZH

from planner.accuracy import Risk
from planner.api import build_plan
from planner.api.portfolio import JobFigures
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.plan_accuracy import Standing
from ui.portfolio_view import with_standing_words
from ui.render_portfolio import accuracy_lines, envelope_word


@pytest.fixture(scope="module")
def uncertainty():
    plan = build_plan(get_preset("llama3-8b"), "h100-sxm", Layout(), TrainingConfig(seq_len=4096), num_gpus=8)
    return plan.estimate.uncertainty


def test_standing_reads_validated_circular_and_outside_from_the_band(uncertainty):
    def standing(validated, circular):
        return uncertainty.model_copy(update={"validated": validated, "circular": circular}).standing

    assert standing(True, False) is Standing.VALIDATED
    assert standing(True, True) is Standing.CIRCULAR
    assert standing(False, False) is Standing.OUTSIDE


def _figures(job: str, standing: Standing | None) -> JobFigures:
    validated = None if standing is None else standing is not Standing.OUTSIDE
    return JobFigures(job, Risk.P80, 10.0, (9.0, 12.0), 1e5, (9e4, 1.2e5), validated, standing, None)


def test_the_cli_table_and_summary_do_not_call_a_circular_plan_validated():
    jobs = [_figures("a", Standing.VALIDATED), _figures("b", Standing.CIRCULAR), _figures("c", Standing.OUTSIDE)]
    assert [envelope_word(f) for f in jobs] == ["validated", "not independent", "outside"]
    assert envelope_word(_figures("d", None)) == "-"
    lines = accuracy_lines(jobs)
    assert len(lines) == 2
    assert lines[0].startswith("accuracy: 1 of 3 plans are outside the validated envelope")
    assert lines[1].startswith("accuracy: 1 of 3 plans are not independently validated")
    assert accuracy_lines([_figures("a", Standing.VALIDATED)]) == []


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_app_table_words_each_standing_in_the_pages_language(tr):
    frame = pd.DataFrame({"validated": [Standing.VALIDATED, Standing.CIRCULAR, Standing.OUTSIDE, None]})
    words = list(with_standing_words(frame, tr)["validated"])
    assert words[:3] == [tr("standing_validated"), tr("standing_circular"), tr("standing_outside")]
    assert pd.isna(words[3])  # no band: a blank cell
    assert len(set(words[:3])) == 3

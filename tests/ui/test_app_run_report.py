"""The run view shows report.json's end-of-run table (each figure's prediction with its 80 % band,
the measured figure and the in-band verdict, in the CLI's cells) and the plan's bands as error bars
(app50 task 1: the page showed none of the bands the report carries)."""

from __future__ import annotations

import json

import pytest
from support.app import EN, ZH, english_sentences, open_tab, planned, request_for, run_app, table

from ui.run_view import read_job, run_figure


@pytest.fixture
def finished_job(tmp_path):
    """A job emitted for the default plan, its metrics and the report of a run on the plan's GPU:
    tokens/s inside its band, MFU far outside it."""
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings
    from trainer.probe import RunSummary, write_report

    chosen = planned(request_for()).plan
    directory = tmp_path / "job"
    emit_job(chosen, directory, name="report-test", run=RunSettings(steps=5))
    e = chosen.estimate
    with (directory / "metrics.jsonl").open("w") as out:
        for step in range(1, 6):
            record = dict(
                step=step, loss=10.0 / step, tokens_per_s=e.throughput.tokens_per_s, mfu=0.01, peak_mem_gib=3.0
            )
            out.write(json.dumps(record) + "\n")
    summary = RunSummary(
        steps_done=5, outcome="completed", step_s=e.time.step_s, tokens_per_s=e.throughput.tokens_per_s,
        mfu=e.throughput.mfu / 10, peak_gib=3.0, final_train_loss=2.0, final_val_loss=None, test_loss=None,
        test_perplexity=None, bad_steps=0, wall_s=10.0, launch_wall_s=10.0, measured_steps=4,
        reserved_gib=e.memory.reserved_gib,
    )  # fmt: skip
    report = write_report(directory, chosen, summary, "cuda", chosen.gpu)
    assert report.band.tokens_per_s is not None and report.band.tokens_per_s.inside is True
    assert report.band.mfu is not None and report.band.mfu.inside is False
    return directory, chosen, report


def test_the_run_view_shows_the_reports_bands_and_verdicts_in_the_clis_cells(finished_job):
    from trainer.probe import REPORT_FORMATS, with_band

    directory, _, report = finished_job
    at = open_tab(run_app(run_dir=str(directory)), "tab_run")
    assert not at.error
    rows = table(at, EN("report_in_band")).set_index(EN("report_figure"))
    predicted = EN("report_predicted_band", coverage=report.band.coverage)
    tokens = rows.loc[EN("report_tokens_per_s")]
    # the CLI's own cell: the predicted figure with its band, as `trainplan run` prints it
    assert tokens[predicted] == with_band(
        report.predicted.tokens_per_s, report.band.tokens_per_s, REPORT_FORMATS["tokens_per_s"]
    )
    assert "(" in tokens[predicted] and tokens[EN("report_in_band")] == "yes"
    assert rows.loc[EN("report_mfu")][EN("report_in_band")] == "no"
    assert rows.loc[EN("report_mfu")][EN("report_measured")] == format(report.measured.mfu, ".1%")
    assert any(c.value.startswith(EN("report_ended", outcome=EN("outcome_completed"), steps=5)) for c in at.caption)


def test_the_run_views_report_is_in_chinese_on_the_chinese_page(finished_job):
    directory, _, _ = finished_job
    at = open_tab(run_app(run_dir=str(directory), lang="zh"), "tab_run", ZH)
    rows = table(at, ZH("report_in_band")).set_index(ZH("report_figure"))
    assert rows.loc[ZH("report_tokens_per_s")][ZH("report_in_band")] == "是"
    caption = next(
        c.value for c in at.caption if c.value.startswith(ZH("report_ended", outcome=ZH("outcome_completed"), steps=5))
    )
    assert not english_sentences(caption)


def test_a_run_on_a_cpu_says_why_no_band_is_checked(finished_job):
    from trainer.probe import RunSummary, write_report

    directory, chosen, _ = finished_job
    summary = RunSummary(5, "completed", 1.0, 10.0, None, None, 2.0, None, None, None, 0, 10.0, 10.0)
    write_report(directory, chosen, summary, "cpu", None)
    at = open_tab(run_app(run_dir=str(directory)), "tab_run")
    rows = table(at, EN("report_in_band")).set_index(EN("report_figure"))
    assert rows.loc[EN("report_step_s")][EN("report_in_band")] == "—"  # the page's blank, not "-"
    assert rows.loc[EN("report_step_s")][EN("report_error")] == "—"
    assert any(EN("report_not_comparable", device="cpu", gpu=chosen.gpu) in c.value for c in at.caption)


def test_the_run_chart_draws_the_plans_bands_as_error_bars(finished_job):
    directory, chosen, _ = finished_job
    fig = run_figure(read_job(directory), EN)
    bars = {t.yaxis: t for t in fig.data if t.error_y is not None and t.error_y.array is not None}
    u = chosen.estimate.uncertainty
    assert u is not None and u.mfu is not None
    tops = sorted((t.y[0] + t.error_y.array[0], t.y[0] - t.error_y.arrayminus[0]) for t in bars.values())
    assert tops == sorted([u.tokens_per_s[::-1], u.mfu[::-1]]), tops  # tokens/s and MFU; no memory band
    assert all(t.x[0] == 5 for t in bars.values())  # at the last step logged


def test_a_stopped_run_says_where_a_rerun_resumes_not_that_it_saved(finished_job):
    """Review s50 M2: a stop at once reports "preempted" at the step it reached with nothing saved;
    the page said "preempted (saved) at step 3" where the rerun resumed from step 2's checkpoint."""
    from trainer.probe import RunSummary, write_report

    directory, chosen, _ = finished_job
    summary = RunSummary(3, "preempted", None, None, None, None, None, None, None, None, 0, 10.0, 10.0)
    write_report(directory, chosen, summary, "cpu", None)
    checkpoints = directory / "ckpt"
    at = open_tab(run_app(run_dir=str(directory)), "tab_run")
    ended = EN("report_ended", outcome=EN("outcome_preempted"), steps=3)
    (caption,) = [c.value for c in at.caption if c.value.startswith(ended)]
    assert "saved" not in caption and EN("report_restarts") in caption  # no checkpoint kept
    (checkpoints / "step-000002").mkdir(parents=True)
    at = open_tab(run_app(run_dir=str(directory)), "tab_run")
    (caption,) = [c.value for c in at.caption if c.value.startswith(ended)]
    assert EN("report_resumes", step=2) in caption

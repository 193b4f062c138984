"""The app's round-3 polish (issue 30): the open tab and the GPU choice survive a mode toggle and
"Send to plan", the sidebar's GPU table, the run view on CPU, formats, narrow metrics, 中文.

Expected values come from the planner's API or the app's own formatters, so a change that breaks
the wiring (not only the wording) fails here.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.app import CATALOG, EN, ZH, open_tab, planned, request_for, run_app, table


def test_the_open_tab_survives_a_portfolio_mode_round_trip():
    at = open_tab(run_app(), "tab_top")
    at.sidebar.toggle(key="portfolio_mode").set_value(True).run()
    at.sidebar.toggle(key="portfolio_mode").set_value(False).run()
    assert not at.exception
    assert at.session_state["main_tab"] == EN("tab_top")


def test_send_to_plan_has_a_way_back_to_every_gpu_type():
    at = open_tab(run_app(), "tab_explorer")
    at.button(key="ex_send").click().run()
    rows = at.session_state["gpu_rows"]
    assert rows["allowed"].sum() == 1 and not at.sidebar.button(key="gpu_allow_all").disabled
    at.sidebar.button(key="gpu_allow_all").click().run()
    rows = at.session_state["gpu_rows"]
    assert rows["allowed"].all() and at.sidebar.button(key="gpu_allow_all").disabled
    assert rows.loc[rows.index[0], "usd_per_gpu_hour"] == CATALOG.gpus[rows.index[0]].price_per_gpu_hour_usd


@pytest.fixture
def cpu_job(tmp_path):
    """A job emitted for the default plan with a CPU run's metrics: no MFU, no peak memory."""
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings

    chosen = planned(request_for()).plan
    directory = tmp_path / "job"
    emit_job(chosen, directory, name="cpu-run", run=RunSettings(steps=3))
    with (directory / "metrics.jsonl").open("w") as out:
        for step in range(1, 4):
            out.write(json.dumps(dict(step=step, loss=9.0, tokens_per_s=1234.0, mfu=None, peak_mem_gib=None)) + "\n")
    (directory / "report.json").write_text("{}")  # finished: no refreshing
    return directory, chosen


@pytest.mark.parametrize("tr", [EN, ZH])
def test_a_cpu_run_says_why_two_panels_are_empty_and_whose_prediction_it_is(cpu_job, tr):
    directory, chosen = cpu_job
    at = open_tab(run_app(run_dir=str(directory), lang=tr.lang), "tab_run", tr)
    captions = [c.value for c in at.caption]
    assert tr("run_no_cuda") in captions
    e = chosen.estimate
    said = tr(
        "run_prediction_elsewhere",
        predicted=e.throughput.tokens_per_s, num_gpus=chosen.num_gpus, gpu=chosen.gpu, measured=1234.0,
    )  # fmt: skip
    assert said in captions
    from ui.run_view import read_job, run_figure

    fig = run_figure(read_job(directory), tr)
    notes = [a.text for a in fig.layout.annotations]
    assert notes.count(tr("run_not_measured")) == 2  # the MFU and the peak-memory panels
    assert len(fig.layout.shapes) == 3  # the predicted tokens/s, MFU and peak memory, empty panels too
    # trial s35 (round 2): the rate and memory axes ran below zero (MFU from -50 %)
    assert [fig.layout[f"yaxis{i}"].rangemode for i in (2, 3, 4)] == ["tozero"] * 3


# --------------------------------------------------------------------------- formats (issue 30, item 9)


def test_durations_never_read_zero_hours():
    from ui.messages import duration

    assert duration(EN, 0.001 * 24) == "1 min" and duration(ZH, 0.001 * 24) == "1 分钟"  # a 0.001-day deadline
    assert duration(EN, 0.005) == EN("under_minute")
    assert duration(EN, 0.5) == "0.5 h" and duration(EN, 5 * 24) == "5.0 days"


def test_the_failures_note_writes_durations_as_the_card_does():
    from planner.explain import Note, NoteKind
    from ui.messages import duration, interval, note_text

    figures = dict(num_gpus=64, mttf_h=1584.0, write_s=12.0, young_min=559.0, interval_min=559.0, restart_min=10.0)
    note = Note(NoteKind.FAILURES, tuple(figures.items()))
    goodput = Note(NoteKind.GOODPUT, (("goodput", 0.97), ("loss", "failures"), ("share", 0.02), ("lost_h", 7.5)))
    for tr in (EN, ZH):
        text = note_text(tr, note)
        assert interval(tr, 559.0) in text and duration(tr, 1584.0) in text
        assert "longer than the run" not in text and "长于整个运行" not in text  # not cut: 559 min is Young/Daly's
        assert "559.0" not in text and "1,584.0" not in text
        said = note_text(tr, goodput)
        assert duration(tr, 7.5) in said and tr("loss_failures") in said and "97.0%" in said


def test_explain_says_what_the_goodput_loses_to_and_when_young_daly_is_cut():
    """Trial s33: "failures: ... the Young/Daly interval is 12.7 seconds ...: goodput 2.1%" on a
    job with 0.0 expected interruptions, where start-up made the loss and Young/Daly was 2.1 h."""
    from planner.explain import Note, NoteKind
    from ui.messages import interval, note_text

    cut = Note(NoteKind.FAILURES, (("num_gpus", 1), ("mttf_h", 26878.7), ("write_s", 0.3), ("young_min", 130.0),
                                   ("interval_min", 0.21), ("cut", 1), ("restart_min", 10.0)))  # fmt: skip
    assert "longer than the run: one checkpoint after 12.6 seconds" in cut.text()
    assert "Young/Daly interval is 2.2 hours" in cut.text()
    for tr in (EN, ZH):
        assert tr("note_interval_cut", young=interval(tr, 130.0), every=interval(tr, 0.21)) in note_text(tr, cut)
    memory = Note(NoteKind.MEMORY, (("term", "grads"), ("value_gib", 1.0), ("peak_gib", 2.0), ("reserved_gib", 2.0),
                                    ("used_fraction", 0.5), ("usable_gib", 4.0)))  # fmt: skip
    assert "gradients is the largest term" in note_text(EN, memory)


def test_mfu_reads_with_one_decimal_everywhere():
    from ui.infeasible_words import plan_phrase

    at = open_tab(run_app(), "tab_top")
    chosen = planned(request_for()).plan
    config = json.loads(at.dataframe[0].proto.columns)
    assert config[EN("col_mfu")]["type_config"]["format"] == "%.1f%%"
    assert at.dataframe[0].value[EN("col_mfu")][0] == pytest.approx(chosen.estimate.throughput.mfu * 100)
    assert f"MFU {chosen.estimate.throughput.mfu:.1%}" in plan_phrase(EN, chosen)


# --------------------------------------------------------------------------- 中文


def test_every_breakdown_term_has_a_label_in_both_languages():
    from planner.estimate_parts import MemoryTerms, TimeTerms
    from ui.i18n import all_labels

    for lang in ("en", "zh"):
        labels = all_labels(lang)
        assert {f"mem_{t}" for t in MemoryTerms.model_fields} <= set(labels)
        assert {f"time_{t}" for t in TimeTerms.model_fields} <= set(labels)


def test_chart_hovers_speak_the_pages_language():
    """The frontier's and the bars' hovers: no English ('days', 'mb 2 x 21 | ac none') on the 中文 page."""
    from planner.api.explore import best_per_count, pareto_front, scored_search
    from planner.model.settings import DEFAULT_SETTINGS
    from ui import figures
    from ui.messages import duration

    frame = best_per_count(scored_search(request_for(), settings=DEFAULT_SETTINGS).frame, "cost")
    points = frame.assign(pareto=pareto_front(frame))
    chosen = planned(request_for()).plan
    for fig in (
        figures.frontier_figure(points, points["pareto"], chosen, ZH),
        figures.scaling_figure(points, "h100-sxm", ZH),
    ):
        hovers = [text for trace in fig.data for text in (trace.text or ()) if isinstance(text, str)]
        assert hovers and not any(" days" in h or "| mb" in h or "| ac" in h for h in hovers), hovers[:2]
    first = points.iloc[0]
    assert duration(ZH, first["time_to_train_days"] * 24) in figures._hover(points.head(1), ZH)[0]
    bars = figures.memory_figure([chosen], 1.0, ZH)
    assert not any("| mb" in c for trace in bars.data if trace.customdata is not None for c in trace.customdata)


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_apps_own_refusals_speak_the_pages_language(tmp_path, tr):
    """A bad job name, a zero purchase price and a directory without a job: the page's words."""
    from ui.i18n import plain

    at = open_tab(run_app(lang=tr.lang, emit_name="my job/1"), "tab_downloads", tr)
    assert [e.value for e in at.error] == [tr("emit_name_bad", name=plain("my job/1"))]
    assert "download_job" not in {b.key for b in at.get("download_button")}
    at = run_app(lang=tr.lang, pricing="bought", purchases={"h100-sxm": 0.0})
    assert tr("bad_purchase", gpu="h100-sxm") in [e.value for e in at.error]
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "job.json").write_text("{not json")
    for folder, key in (("empty", "run_no_job"), ("broken", "run_bad_job")):
        at = open_tab(run_app(lang=tr.lang, run_dir=str(tmp_path / folder)), "tab_run", tr)
        assert [e.value for e in at.error] == [tr(key, path=plain(str(tmp_path / folder)))]


def test_the_portfolio_table_words_each_jobs_training_in_chinese():
    """The jobs' layout column was the planner's English label ('| mb 1 x 8 | ac none'); on the
    中文 page the training part is worded as the chart hovers word it (issue 30)."""
    at = run_app(lang="zh", portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8})
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert not at.exception
    layouts = list(table(at, ZH("col_start_days"))[ZH("col_layout")])
    assert layouts and all("微批" in text and "激活重计算" in text for text in layouts), layouts
    assert not any(" | mb " in text or "| ac " in text for text in layouts), layouts


def test_a_validated_envelope_keeps_its_own_rows_apart_from_the_bands():
    """Trial s33 (app): "2 held-out rows (S13, S14, S3, dgxc, mlperf, moe-modelzoo)": the regime's
    two rows were given the band's six sources and its error, where the CLI says both apart."""
    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import Layout, TrainingConfig
    from ui.messages import envelope_text

    u = build_plan(get_preset("llama3-8b"), "h100-sxm", Layout(), TrainingConfig(seq_len=4096), num_gpus=8)
    u = u.estimate.uncertainty.model_copy(
        update={
            "validated": True,
            "circular": False,
            "exact_rows": 2,
            "exact_sources": ("dgxc",),
            "rows": 36,
            "sources": ("S13", "S14", "dgxc"),
            "mean_abs_error": 0.115,
        }
    )
    for tr in (EN, ZH):
        text = envelope_text(tr, u)
        # trial s34: sources by name, not their codes ("S2" meant nothing to a user)
        assert "(DGX Cloud benchmarking)" in text or "（DGX Cloud benchmarking）" in text
        assert "36" in text and "NeMo performance summary" in text and "11.5%" in text and "S13" not in text
    # trial s34: fewer than MIN_ROWS of the regime's own: how many of the band's rows are others'
    few = "by only 2 held-out rows (DGX Cloud benchmarking): trainplan on Hopper, more than one GPU. The band is"
    assert few in envelope_text(EN, u) and "36 rows, 34 of them of nearby regimes" in envelope_text(EN, u)
    many = envelope_text(EN, u.model_copy(update={"exact_rows": 6}))
    assert "6 held-out rows (DGX Cloud benchmarking). The band is read from 36 rows (NeMo performance summary," in many
    assert "only" not in envelope_text(EN, u.model_copy(update={"exact_rows": 6}))


def test_the_top_plans_say_the_tie_rule_that_chose_a_dearer_plan():
    """Trial s33 (app): 'Cheapest' showed 32 x b200 where its own table listed 16 x b200 cheaper; the
    CLI said the 1 % tie rule, the app nothing. One reading (planner/api/notices.py tie_rule)."""
    from planner.api import PlanRequest, plan
    from planner.api.notices import tie_rule
    from planner.catalog.models import get_preset
    from ui.plan_card import card_captions, tie_rule_text
    from ui.render_plan import tie_rule_line

    result = plan(PlanRequest(model=get_preset("llama3-8b"), training_tokens=160_605_224_960, objective="cost"))
    rule = tie_rule(result)
    assert rule is not None and rule.objective == "cost" and rule.rank >= 1
    assert f"#{rule.rank}) count as tied, and the faster of them is chosen" in tie_rule_line(result)
    for tr in (EN, ZH):
        text = tie_rule_text(tr, result)
        assert text is not None and f"{rule.fraction:.0%}" in text
    # trial s34: the app's Top plans table ranks the chosen plan 1, so the CLI's #1 is its #2
    from ui import app_core

    frame = app_core.top_plans_frame([result.plan, *result.alternatives], rule.risk)
    ranked = frame.loc[frame["cost_at_risk_usd"].round(6) == round(rule.best, 6), "rank"]
    assert list(ranked) == [rule.rank + 1] and f"#{rule.rank + 1})" in tie_rule_text(EN, result)
    # trial s35 (app): said under Top plans only; the card says it too
    assert tie_rule_text(EN, result) in card_captions(EN, result.plan, result, None)


def test_a_portfolio_jobs_detail_line_gives_the_planners_figures_in_english_too():
    """Trial s34 (app): under a portfolio's failing job the English line was the jobs file's sentence
    (deadline_days, global_batch_tokens, 25 "<=4096" limits); 中文 gave the exact figures."""
    from ui.app_core import Infeasible
    from ui.infeasible_words import detail_text

    words = "the fastest plan needs 0.209 days with the allowed inventory (a10<=4096, b200<=4096)"
    job = Infeasible("deadline", words, "set deadline_days to 0.209 or more", 18_057.6, 4_320.0, job="beta")
    for tr in (EN, ZH):
        text = detail_text(tr, job)
        assert "deadline_days" not in text and "<=4096" not in text and "5.02" in text, text
    single = Infeasible("deadline", words, "allow 6 hours", 18_057.6, 4_320.0)
    assert "allow 6 hours" in detail_text(EN, single)  # a single job keeps the planner's words
    # trial s35 (round 2): two jobs that cannot run read the jobs file's words again
    two = Infeasible(
        "deadline", "2 jobs", "fix", jobs=(("beta", job), ("gamma", dataclasses.replace(job, job="gamma")))
    )
    for tr in (EN, ZH):
        text = detail_text(tr, two)
        assert "deadline_days" not in text and text.count("5.02") == 2 and "gamma" in text, text


def test_a_stack_without_context_parallelism_says_so_when_no_count_fits():
    """Trial s34 (app): megatron-lm at 131K tokens offered a GPU with more memory and nothing of the
    stacks that split the sequence, in both languages."""
    from planner.api import PlanRequest
    from planner.catalog.models import get_preset
    from planner.model.stacks import Stack
    from ui.app_core import Infeasible
    from ui.infeasible_words import infeasible_text

    answer = Infeasible("memory", "", "", 457.7, 276.6, more_gpus_help=False)
    request = PlanRequest(model=get_preset("llama3-8b"), training_tokens=1e10, seq_len=131072, stack=Stack.MEGATRON_LM)
    assert "megatron-lm has no context parallelism" in infeasible_text(EN, answer, request)
    assert "megatron-lm 没有上下文并行" in infeasible_text(ZH, answer, request)
    short = request.model_copy(update={"seq_len": 4096})
    assert "context parallelism" not in infeasible_text(EN, answer, short)


def test_a_probe_line_writes_the_pages_seconds_and_blank(tmp_path):
    """Trial s35 (round 2): "peak memory - measured" and "16.29 s" on the 中文 page."""
    from planner.reports import ValidationReport
    from ui.app_core import BLANK
    from ui.run_view import probe_text

    report = ValidationReport.model_validate(
        {
            "probe_steps": 3,
            "device": "cpu",
            "comparable": False,
            "measured": {"step_s": 16.29, "peak_gib": None},
            "predicted": {"step_s": 0.07, "peak_gib": 12.0},
            "error_pct": {"step_s": None, "peak_gib": None},
            "reserved_gib": {"predicted": 14.0, "measured": None},
        }
    )
    assert "16.290 秒" in probe_text(ZH, report) and f"{BLANK}" in probe_text(EN, report)
    assert " - " not in probe_text(EN, report)


def test_a_kept_answer_says_its_solve_time_is_the_first_runs():
    """Trial s39 (app): the card kept "highs in 23.7 s" on every rerun of a cached request, as if
    each change cost that much; a kept answer says its time is the first run's."""
    at = run_app()
    at.run()  # the same request again: served from the cache
    footers = [c.value for c in at.caption if " candidates, " in c.value]
    assert len(footers) == 1 and footers[0].endswith("when first asked (this answer was kept, not solved again)")


@pytest.mark.parametrize("tr", [EN, ZH])
def test_a_small_mfu_axis_reads_distinct_ticks_and_the_tokens_per_s_say_which(cpu_job, tr):
    """app53 L9: at 0.1 % MFU the axis read "0% 0% 0% 0% 0% 0%"; the metric's tokens/s (the last
    step's) stood beside the report's whole-job figure unnamed."""
    from dataclasses import replace

    from ui.run_view import percent_axis_format, read_job, run_figure

    assert percent_axis_format(0.5) == ".0~%" and percent_axis_format(0.001) == ".2~%"
    assert f"{0.0004:.2%}" != f"{0.0002:.2%}" and f"{0.0004:.0%}" == f"{0.0002:.0%}"  # why the decimals
    directory, _ = cpu_job
    at = open_tab(run_app(run_dir=str(directory), lang=tr.lang), "tab_run", tr)
    assert [m.label for m in at.metric if m.value == "1,234"] == [tr("run_tokens_last_step")]
    with (directory / "metrics.jsonl").open("w") as out:  # a demo model's MFU, measured, with no plan
        for step in range(1, 4):
            out.write(json.dumps(dict(step=step, loss=9.0, tokens_per_s=1234.0, mfu=0.001, peak_mem_gib=1.0)) + "\n")
    fig = run_figure(replace(read_job(directory), plan=None), tr)
    (mfu_axis,) = [fig.layout[f"yaxis{i}"] for i in (1, 2, 3, 4) if fig.layout[f"yaxis{i}"].tickformat]
    assert mfu_axis.tickformat == ".2~%"


def test_a_run_reports_sentences_join_without_a_stray_space_in_chinese():
    """app53 L9: "第 20 步。 在 cpu" (a space after the full stop) in the end-of-run caption."""
    from types import SimpleNamespace

    from ui.run_report import report_caption

    report = SimpleNamespace(outcome="completed", steps_done=20, comparable=False, device="cpu", gpu="h100-sxm")
    caption = report_caption(ZH, report)
    assert "。 " not in caption and caption.startswith(ZH("report_ended", outcome=ZH("outcome_completed"), steps=20))
    assert report_caption(EN, report).endswith(". " + EN("report_not_comparable", device="cpu", gpu="h100-sxm"))

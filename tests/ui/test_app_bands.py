"""Trial s33 (app), sections 6, 8, 10 and 12: every figure with its 80 % band (card, layout explorer,
Top plans, the chosen plan on the frontier), the portfolio's word on jointly chosen plans, small
token counts and step times as the card writes them, and a downloaded job whose README names no
server folder.

Expected values come from the planner's API (``plan``, ``build_plan``) and the app's own
formatters, so a figure shown without its band, or with another figure's, fails here.
"""

from __future__ import annotations

import io
import json
import zipfile

from support.app import EN, ZH, open_tab, planned, request_for, run_app, table
from support.cli import call

from planner.api.explore import best_per_count, pareto_front, scored_search
from planner.model.settings import DEFAULT_SETTINGS
from ui import app_core, app_jobs, figures
from ui.messages import duration, per_second, seconds


def metrics(at) -> dict[str, tuple[str, str]]:
    """Each metric's label: (value, delta), the last one drawn under a label (the explorer's below the card's)."""
    return {m.label: (m.value, m.delta) for m in at.metric}


def test_the_card_gives_tokens_per_s_its_own_metric_with_its_band():
    e = planned(request_for()).plan.estimate
    u = e.uncertainty
    assert u is not None
    for tr in (EN, ZH):
        value, delta = metrics(run_app(lang=tr.lang))[tr("card_tokens")]
        assert value == per_second(e.throughput.tokens_per_s)
        assert delta == tr("card_band", lo=per_second(u.tokens_per_s[0]), hi=per_second(u.tokens_per_s[1]))
    # trial s35: MFU, tokens/s x FLOPs per token / peak, was the one performance figure without a band
    _, delta = metrics(run_app())[EN("card_mfu")]
    low, high = (e.throughput.mfu * end / e.throughput.tokens_per_s for end in u.tokens_per_s)
    assert delta == EN("card_band", lo=f"{low:.1%}", hi=f"{high:.1%}") and low < e.throughput.mfu < high


def test_the_layout_explorer_shows_each_figures_band_and_the_cards_step_time():
    """Trial s33: the explorer's step, tokens/s, time and cost had no band, and its 中文 step read
    '3.18 s' beside the card's '3.177 秒'."""
    chosen = planned(request_for()).plan  # the explorer starts from it: the same estimate
    e, u = chosen.estimate, chosen.estimate.uncertainty
    assert u is not None and u.time_to_train_h is not None and u.cost_usd is not None
    for tr in (EN, ZH):
        shown = metrics(open_tab(run_app(lang=tr.lang), "tab_explorer", tr))
        assert shown[tr("ex_step")] == (
            seconds(tr, e.time.step_s),
            tr("card_band", lo=seconds(tr, u.step_s[0]), hi=seconds(tr, u.step_s[1])),
        )
        band = tr("card_band", lo=per_second(u.tokens_per_s[0]), hi=per_second(u.tokens_per_s[1]))
        assert shown[tr("tokens_per_s")] == (per_second(e.throughput.tokens_per_s), band)
        band = tr("card_band", lo=duration(tr, u.time_to_train_h[0]), hi=duration(tr, u.time_to_train_h[1]))
        assert shown[tr("card_time")][1] == band
        assert shown[tr("card_cost")][1] == tr(
            "card_band", lo=app_core.money(u.cost_usd[0]), hi=app_core.money(u.cost_usd[1])
        )
        assert u.mfu is not None  # trial s35 (round 2): the explorer's MFU had no band
        assert shown[tr("card_mfu")][1] == tr("card_band", lo=f"{u.mfu[0]:.1%}", hi=f"{u.mfu[1]:.1%}")
    assert seconds(ZH, 3.1771) == "3.177 秒" and seconds(EN, 3.1771) == "3.177 s"


def test_top_plans_have_the_cost_and_tokens_bands_written_as_the_portfolio_writes_cost():
    at = open_tab(run_app(), "tab_top")
    shown = table(at, EN("col_layout"))
    plans = [planned(request_for()).plan, *planned(request_for()).alternatives]
    for row, p in zip(shown.itertuples(index=False), plans, strict=True):
        u = p.estimate.uncertainty
        values = dict(zip(shown.columns, row, strict=True))
        assert (values[EN("col_cost_p10_usd")], values[EN("col_cost_p90_usd")]) == u.cost_usd
        assert (values[EN("col_tokens_p10_per_s")], values[EN("col_tokens_p90_per_s")]) == u.tokens_per_s
    config = json.loads(at.dataframe[0].proto.columns)
    for key in ("col_cost_p10_usd", "col_cost_p90_usd"):  # the portfolio table's cost band format
        assert config[EN(key)]["type_config"]["format"] == app_core.DOLLARS == "$%,.0f"
    for key in ("col_tokens_p10_per_s", "col_tokens_p90_per_s"):
        assert config[EN(key)]["type_config"]["format"] == config[EN("col_tokens_per_s")]["type_config"]["format"]
    columns = list(shown.columns)
    assert columns.index(EN("col_cost_p10_usd")) + 1 == columns.index(EN("col_cost_p90_usd"))


def test_the_chosen_plan_on_the_frontier_carries_its_cost_band():
    result = planned(request_for())
    frame = best_per_count(scored_search(request_for(), settings=DEFAULT_SETTINGS).frame)
    fig = figures.frontier_figure(frame, pareto_front(frame), result.plan, EN)
    star = next(t for t in fig.data if t.name == EN("chosen_plan"))
    e = result.plan.estimate
    assert e.uncertainty is not None and e.cost_usd is not None
    assert star.error_y.visible is not False
    assert star.error_y.array[0] == e.uncertainty.cost_usd[1] - e.cost_usd
    assert star.error_y.arrayminus[0] == e.cost_usd - e.uncertainty.cost_usd[0]
    # trial s34: its hover had no figures where the knee's had them
    assert star.text[0].endswith(figures.figures_words(EN, e.cost_usd, e.time_to_train_h)) and " · " in star.text[0]


def test_the_portfolio_says_once_that_its_plans_are_chosen_jointly():
    for tr in (EN, ZH):
        at = run_app(lang=tr.lang, portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8})
        for name in ("first", "second"):
            at.text_input(key="job_name").set_value(name)
            at.button(key="add_job").click().run()
            said = [c.value for c in at.caption].count(tr("portfolio_joint"))
            assert said == (1 if name == "second" else 0), (tr.lang, name)  # one job: no other to share with


def test_the_model_caption_keeps_a_small_token_count():
    """Trial s33: 0.001 B tokens read '0.0 B training tokens'."""
    at = run_app(tokens_mode="absolute", tokens_billions=0.001)
    summary = EN(
        "model_summary", name="gpt3-125m", params=planned(request_for()).plan.model.num_params() / 1e9, tokens="0.001"
    )
    assert summary in [c.value for c in at.caption]
    at = run_app()  # 20 tokens per parameter: one decimal, as before
    assert any(c.value.endswith(" B parameters, 2.5 B training tokens") for c in at.caption)


def test_the_downloaded_job_readme_names_no_server_folder_and_emits_still_does(tmp_path):
    """Trial s33: the zip's README said 'it was written to /tmp/trainplan-job-…/name', a folder on the
    server the downloader never sees; ``trainplan emit`` still says where it wrote the job."""
    chosen = planned(request_for()).plan
    with zipfile.ZipFile(io.BytesIO(app_jobs.emit_job_zip(chosen, "my-job", steps=7))) as archive:
        readme = archive.read("my-job/README.md").decode()
        sbatch = archive.read("my-job/slurm.sbatch").decode()
    assert "trainplan-job-" not in readme and "written to" not in readme
    assert "trainplan-job-" not in sbatch and "JOB_DIR=${TRAINPLAN_JOB_DIR:-${SLURM_SUBMIT_DIR:-.}}" in sbatch
    assert "From this directory (it may be moved or unzipped anywhere):" in readme
    plan_file = chosen.save(tmp_path / "plan.json")
    code, _, err = call("emit", str(plan_file), "--out", str(tmp_path / "job"), "--name", "my-job", "--steps", "7")
    assert code == 0, err
    cli = (tmp_path / "job" / "README.md").read_text()
    assert f"(it may be moved or unzipped anywhere; it was written to {(tmp_path / 'job').resolve()}):" in cli
    assert cli.replace(f"; it was written to {(tmp_path / 'job').resolve()}", "") == readme
    assert str((tmp_path / "job").resolve()) in (tmp_path / "job" / "slurm.sbatch").read_text()


def test_a_cost_band_keeps_one_unit_at_both_ends():
    """Trial s35 (round 2): "80 % band $297,343–$1.01M" in the explorer."""
    from types import SimpleNamespace

    from ui.messages import figure_bands

    fields = ("time_to_train_h", "energy_kwh", "tokens_per_s", "step_s", "mfu")
    u = SimpleNamespace(cost_usd=(297_343.0, 1.01e6), **dict.fromkeys(fields))
    assert figure_bands(EN, SimpleNamespace(uncertainty=u, cost_usd=500_000.0, memory_band=None))["cost_usd"] == EN(
        "card_band", lo="$0.30M", hi="$1.01M"
    )


def test_the_layout_explorer_says_the_estimates_warnings():
    """Review s43: under a reserved price the explorer's cost bills the whole term, with no word of
    it where the card says it; its warning gives the term's bill, in both languages. Parity trial
    s50: the CLI's other estimate warnings were unsaid there (here: a job shorter than its start-up)."""
    from planner.api import plan_commitment
    from ui.messages import commitment_text

    request = request_for(gpus={"h100-sxm": None}, price_kind="reserved-3y")
    chosen = planned(request).plan  # the explorer starts from it
    term = plan_commitment("reserved-3y", chosen)
    assert term is not None
    for tr in (EN, ZH):
        at = open_tab(run_app(gpus=["h100-sxm"], pricing="reserved_3y", lang=tr.lang), "tab_explorer", tr)
        assert commitment_text(tr, term) in [w.value for w in at.warning]
    longer = open_tab(run_app(gpus=["h100-sxm"], seq_len=4096), "tab_explorer", EN)
    assert not [w.value for w in longer.warning if "bills whole" in w.value]  # on demand
    # the sidebar says a sequence past the context, under its input (not again on the card, nor here)
    assert len([w.value for w in longer.warning if "positions are learned" in w.value]) == 1
    short = open_tab(run_app(gpus=["h100-sxm"], tokens_mode="absolute", tokens_billions=0.001), "tab_explorer", EN)
    card, explorer = [w.value for w in short.warning if w.value.startswith("The job trains for")]
    assert card == explorer and "start-up" in explorer


def test_the_step_line_and_the_gpu_count_read_as_the_rest_of_the_page():
    """app53 L3: the step line wrote "23.088 (17.097-27.575) s" beside the metrics' "–" bands, and
    the card's "4096 × mi325x" stood beside "4,096 GPUs"; the CLI keeps its hyphen."""
    from planner.fmt import number_band
    from ui.messages import BAND_DASH
    from ui.plan_card import card_captions, card_rows

    result = planned(request_for(gpus={"h100-sxm": None}))
    e = result.plan.estimate
    assert e.uncertainty is not None
    step = number_band(e.time.step_s, e.uncertainty.step_s, 3, dash=BAND_DASH)
    assert f"({e.uncertainty.step_s[0]:,.3f}–" in step and "-" not in step
    assert number_band(1.0, (0.5, 2.0), 1) == "1.0 (0.5-2.0)"  # the CLI's
    for tr in (EN, ZH):
        assert any(step in line for line in card_captions(tr, result.plan, result, None, False, False))
    big = result.plan.model_copy(update={"num_gpus": 4096})
    assert card_rows(EN, big, False)[0][0] == (1, "card_gpus", "4,096 × h100-sxm")

"""The Streamlit app, run headless with AppTest: widgets, plan card vs planner.api, errors, language.

Every expected number comes from calling ``planner.api`` / ``planner.api.explore`` directly with the
request the widgets describe, so a wrong wiring (a widget feeding the wrong field, a stale cache,
a mislabelled metric) fails here. Small models and two or three GPU types keep each run fast.
"""

from __future__ import annotations

import io
import json
import math
import string
import tempfile
import zipfile

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest
from support.app import (
    EN,
    GPUS,
    HF_CONFIGS,
    TABS,
    ZH,
    card,
    english_sentences,
    open_tab,
    planned,
    request_for,
    run_app,
    table,
    widgets,
)  # fmt: skip

from planner import fmt
from planner.api import PlanRequest
from planner.api.explore import best_per_count, pareto_front, plan_portfolio, scored_search, why_not
from planner.catalog.detect import DetectedGPU
from planner.catalog.models import get_preset, model_from_hf_config
from planner.errors import InfeasiblePlan
from planner.fmt import energy
from planner.layout import Precision
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.spec import ModelSpec
from planner.search.ilp import Objective
from planner.search.ownership import TcoAssumptions
from planner.units import HOURS_PER_YEAR
from trainer.job_spec import JobSpec
from ui import app_core, app_jobs, figures
from ui.gpu_table import apply_edits
from ui.i18n import LANGUAGE_NAMES, Labels, all_labels, label_keys, plain
from ui.infeasible_words import app_words
from ui.messages import cost_parts, figure_bands
from ui.sidebar import CUSTOM_FIELDS, SEQ_LENS


def assert_card_shows(at: AppTest, request: PlanRequest, tr: Labels = EN) -> None:
    """The plan card's numbers are those of planner.api.plan for the same request."""
    expected = planned(request).plan
    shown = card(at)
    e = expected.estimate
    assert shown[tr("card_gpus")] == f"{expected.num_gpus} × {expected.gpu}"
    assert shown[tr("card_nodes")] == f"{expected.num_nodes} × {expected.gpus_per_node}"
    assert shown[tr("card_layout")] == expected.layout.describe()
    t = expected.training
    assert shown[tr("card_batch")] == f"{t.micro_batch} × {t.grad_accum} × {t.seq_len}"
    assert shown[tr("card_cost")] == cost_parts(e)[0]
    assert shown[tr("card_mfu")] == f"{e.throughput.mfu:.1%}"
    assert shown[tr("card_energy")] == energy(e.energy_kwh)
    assert shown[tr("card_memory")] == f"{e.memory.reserved_gib:.1f} GiB"
    (memory,) = [m for m in at.metric if m.label == tr("card_memory")]
    share = tr("card_memory_of", fraction=e.memory.reserved_gib / e.memory.capacity_gib, capacity=e.memory.capacity_gib)
    # the reserved peak's band, as every other figure has its own (app53 M2: only in the grey text)
    assert e.memory_band is not None
    lo, hi = (f"{gib:.1f} GiB" for gib in e.memory_band.reserved_gib)
    assert memory.delta == tr("card_memory_band", band=tr("card_band", lo=lo, hi=hi), share=share)
    # its denominator named, beside Why this plan's "of the usable ... GiB" (app trial s45 L6)
    words = {"en": f"of {e.memory.capacity_gib:.1f} GiB capacity", "zh": f"占容量 {e.memory.capacity_gib:.1f} GiB 的"}
    assert words[tr.lang] in memory.delta
    key, value = app_core.duration_key(e.time_to_train_h)
    assert shown[tr("card_time")] == tr(key, value=value)
    # the 80 % band under the time and the cost, and what it rests on (planner/accuracy)
    u = e.uncertainty
    assert u is not None and u.time_to_train_h is not None and u.cost_usd is not None
    (time,) = [m for m in at.metric if m.label == tr("card_time")]
    lo, hi = (tr(app_core.duration_key(h)[0], value=app_core.duration_key(h)[1]) for h in u.time_to_train_h)
    assert time.delta == tr("card_band", lo=lo, hi=hi)
    (cost,) = [m for m in at.metric if m.label == tr("card_cost")]
    lo, hi = cost_parts(e)[1] or ("", "")
    assert cost.delta == tr("card_band", lo=lo, hi=hi)
    # the ends written as the figure is (fmt.money_band_parts, review s36): cents with it, in its unit,
    # not each end alone (a $110 figure over "$94.33-$144" read as two formats)
    assert ("." in lo) == ("." in shown[tr("card_cost")]) == ("." in hi)
    envelope = "envelope_validated" if u.validated else "envelope_outside"
    assert any(c.value.startswith(tr(envelope).split("{")[0]) for c in at.caption), envelope
    assert e.goodput is not None and e.goodput.expected_interruptions is not None
    assert shown[tr("card_goodput")] == f"{e.goodput.goodput_fraction:.1%}"
    expected = e.goodput.expected_interruptions
    assert shown[tr("card_interruptions")] == fmt.expected_events(expected)  # the CLI's figure (trial s47 L7)
    (energy_metric,) = [m for m in at.metric if m.label == tr("card_energy")]  # every figure has its band
    assert u.energy_kwh is not None and energy_metric.delta == tr(
        "card_band", lo=energy(u.energy_kwh[0]), hi=energy(u.energy_kwh[1])
    )
    assert energy_metric.help == tr("card_energy_help")  # what it assumes, as the CLI's line says (review s48)


# --------------------------------------------------------------------------- app runs


def test_plan_card_matches_the_api_and_every_panel_renders():
    at = run_app()
    assert_card_shows(at, request_for())
    assert [t.label for t in at.tabs] == [EN(k) for k in TABS]
    assert len(at.get("plotly_chart")) == 2  # memory and step time: only the open tab runs
    open_tab(at, "tab_explore")
    assert len(at.get("plotly_chart")) == 2  # frontier, scaling
    assert at.selectbox(key="scaling_gpu").value == card(at)[EN("card_gpus")].split(" × ")[1]
    open_tab(at, "tab_top")
    top = table(at, EN("col_layout"))
    expected = planned(request_for())
    assert list(top[EN("col_gpu")]) == [p.gpu for p in (expected.plan, *expected.alternatives)]
    assert list(top[EN("col_num_gpus")]) == [p.num_gpus for p in (expected.plan, *expected.alternatives)]
    open_tab(at, "tab_downloads")
    assert {b.key for b in at.get("download_button")} == {"download_plan", "download_job"}
    steps = at.number_input(key="emit_steps")  # unset: the job trains the plan's tokens, as emit's default
    assert steps.value is None and f"{expected.plan.training_steps:,} steps" in steps.proto.placeholder


def test_every_widget_has_a_key_in_every_mode():
    states = [
        {},
        dict(model_source="custom", pricing="bought", objective="mix", tokens_mode="absolute"),
        dict(model_source="upload"),
        dict(portfolio_mode=True, inventory={"h100-sxm": 8}),
    ]
    runs = [run_app(**state) for state in states]
    at = runs[0]
    extra = ("tab_explore", "tab_why_not", "tab_downloads", "tab_explorer", "tab_run")
    runs += [open_tab(at, name) for name in extra]
    for state, at in zip([*states, *extra], runs, strict=True):
        missing = [f"{w.type}:{getattr(w, 'label', '')}" for w in widgets(at) if not w.key]
        assert not missing, (state, missing)
        assert len(widgets(at)) > 10


def test_changed_inputs_give_the_api_plan_for_the_same_request():
    at = run_app()
    at.sidebar.radio(key="tokens_mode").set_value("absolute").run()
    at.sidebar.number_input(key="tokens_billions").set_value(5.0)
    at.sidebar.number_input(key="deadline_days").set_value(0.1)  # binds: the cheapest plan takes 10 h
    at.sidebar.selectbox(key="seq_len").set_value(1024)
    at.run()
    # the GPU table's edits as the editor reports them (rows by position), folded as its on_change does
    rows = at.session_state["gpu_rows"]
    position = {gpu: i for i, gpu in enumerate(rows.index)}
    edits = {position[g]: {"allowed": g in ("a100-80gb-sxm", "l40s")} for g in [*GPUS, "l40s"]}
    edits[position["a100-80gb-sxm"]].update(inventory=16, usd_per_gpu_hour=1.5, memory_gib=1.0)  # memory: read-only
    edits[position["l40s"]]["usd_per_gpu_hour"] = 0.9
    at.session_state["gpu_rows"] = apply_edits(rows, {"edited_rows": edits})
    at.run()
    assert not at.exception
    request = request_for(
        training_tokens=5e9,
        gpus={"a100-80gb-sxm": 16, "l40s": None},
        deadline_days=0.1,
        seq_len=1024,
        price_overrides={"a100-80gb-sxm": 1.5, "l40s": 0.9},
    )
    assert_card_shows(at, request)
    at.sidebar.radio(key="objective").set_value("time").run()
    assert_card_shows(at, request.model_copy(update={"objective": Objective.TIME}))  # not a str: it serialises


def test_infeasible_request_shows_the_binding_constraint_and_the_fix():
    request = request_for(deadline_days=0.01, gpus={"a100-80gb-sxm": 2})
    with pytest.raises(InfeasiblePlan) as expected:
        planned(request)
    at = run_app(gpus=["a100-80gb-sxm"], deadline_days=0.01, inventory={"a100-80gb-sxm": 2})
    assert not at.metric
    (warning,) = at.warning
    exc = expected.value
    more = exc.more_gpus  # the probe's count past the inventory, typed (trial s48 M7)
    assert more is not None and more.gpu == "a100-80gb-sxm" and more.num_gpus > 2
    assert warning.value == EN(
        "infeasible",
        constraint=EN.option("deadline"),
        body=EN(
            "why_deadline_more_gpus",
            need=EN("hours_value", value=exc.required / 3600),
            have=EN("hours_value", value=0.24),
            limit=f"{EN('gpu_inventory')}: a100-80gb-sxm ≤ 2",
            # whole units rounded up, as the planner's own fix (trial s28d: 19.5 days beside its 20)
            fix=EN("hours_up", value=math.ceil(exc.required / 3600 - 1e-9)),
            gpus=more.num_gpus,
            gpu=more.gpu,
            time=EN("hours_value", value=more.seconds / 3600),
            risk="p80",
            batch="",  # the count's batch is the one asked for, and the request sets no budget
            over="",
        ),
    )
    # the planner's own words too, its request fields named as the sidebar names them
    assert any(c.value == plain(app_words(EN, f"{exc.detail}; {exc.fix}")) for c in at.caption)
    assert EN("tab_why_not") in [t.label for t in at.tabs]  # the page still explains itself


def test_infeasible_message_names_the_gpu_cap_when_it_binds_in_both_languages():
    request = request_for(deadline_days=0.01, max_gpus=4)
    with pytest.raises(InfeasiblePlan) as expected:
        planned(request)
    assert "max_gpus" in expected.value.fix  # the cap binds: more GPUs would meet the deadline
    for tr in (EN, ZH):
        at = run_app(deadline_days=0.01, max_gpus=4, lang=tr.lang)
        (warning,) = at.warning
        assert f"{tr('max_gpus')} = 4" in warning.value and tr("no_gpu_limit") not in warning.value
    assert not english_sentences(warning.value)


def test_language_switch_translates_every_label():
    en = run_app()
    zh = run_app(lang="zh")
    en_labels = {w.key: w.label for w in widgets(en)}
    zh_labels = {w.key: w.label for w in widgets(zh)}
    assert en_labels.keys() == zh_labels.keys()
    untranslated = [k for k in en_labels if en_labels[k] == zh_labels[k] and k != "lang"]
    assert not untranslated
    import app  # the page's module: its functions run only under `streamlit run`

    translated_options = {
        w.key
        for w in widgets(zh)
        if hasattr(w, "options") and list(w.options) != list(next(v for v in widgets(en) if v.key == w.key).options)
    }
    assert translated_options and translated_options <= set(app.TRANSLATED_CHOICES)  # kept across a switch
    assert zh.sidebar.selectbox(key="preset").label == ZH("preset")
    assert zh.title[0].value == ZH("title")
    assert next(t.label for t in zh.tabs) == ZH("tab_breakdowns")
    assert_card_shows(zh, request_for(), tr=ZH)
    assert ZH("card_time") in card(zh) and EN("card_time") not in card(zh)
    # The open tab and the choices survive a switch (the browser holds both as labels).
    at = open_tab(run_app(objective="time"), "tab_why_not")
    at.sidebar.radio(key="lang").set_value("zh").run()
    assert at.session_state["main_tab"] == ZH("tab_why_not") and at.selectbox(key="why_not_gpu").label == ZH(
        "why_not_gpu"
    )
    assert at.sidebar.radio(key="objective").value == "time"


def test_custom_dimensions_are_planned_as_given():
    at = run_app(model_source="custom")
    for key, value in (
        ("custom_layers", 12),
        ("custom_hidden", 1024),
        ("custom_ffn", 2816),
        ("custom_heads", 16),
        ("custom_kv_heads", 4),
        ("custom_vocab", 32000),
    ):
        at.sidebar.number_input(key=key).set_value(value)
    at.run()
    model = ModelSpec(
        name="custom",
        num_layers=12,
        hidden_size=1024,
        ffn_hidden_size=2816,
        num_heads=16,
        num_kv_heads=4,
        vocab_size=32000,
        max_seq_len=131072,
    )
    assert_card_shows(at, request_for(model=model))
    at.sidebar.number_input(key="custom_heads").set_value(3).run()
    # the error names the fields by their labels on screen, not ModelSpec's field names
    error = f"“{EN('custom_heads')}” 3 is not a multiple of “{EN('custom_kv_heads')}” 4"
    assert [e.value for e in at.error] == [EN("bad_custom", error=error)]
    assert not at.metric


def test_uploaded_config_is_planned_like_the_file():
    at = run_app(model_source="upload")
    assert at.sidebar.info[0].value == EN("upload_needed")
    path = HF_CONFIGS / "llama.json"
    at.sidebar.file_uploader(key="config_upload").upload("llama.json", path.read_bytes(), "application/json")
    at.run()
    assert not at.error
    model = model_from_hf_config(path)
    assert_card_shows(at, request_for(model=model.model_copy(update={"name": model.name})))


@pytest.mark.parametrize(
    "content, message",
    [
        (b"{not json", "not valid JSON"),
        (json.dumps({"model_type": "t5", "d_model": 512}).encode(), "unsupported model_type 't5'"),
        (
            json.dumps(
                {
                    "model_type": "llama",
                    "hidden_size": 10**9,
                    "num_hidden_layers": 2,
                    "num_attention_heads": 8,
                    "vocab_size": 100,
                    "intermediate_size": 64,
                }
            ).encode(),
            "out of range",
        ),
    ],
)
def test_bad_uploads_show_a_clear_error(content, message):
    at = run_app(model_source="upload")
    at.sidebar.file_uploader(key="config_upload").upload("bad.json", content, "application/json")
    at.run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and message in errors[0] and errors[0].startswith(EN("bad_config", error="bad.json"))
    assert "trainplan-upload-" not in errors[0]  # names the upload, not the temporary file
    assert at.info[0].value == EN("fix_inputs")


def test_a_preset_change_fits_the_sequence_to_the_model_context():
    at = run_app(preset="llama3.2-1b", seq_len=8192)
    assert not at.sidebar.warning
    at.sidebar.selectbox(key="preset").set_value("gpt3-125m").run()  # context 2048
    assert at.sidebar.selectbox(key="seq_len").value == 2048 and not at.sidebar.warning
    at.sidebar.selectbox(key="seq_len").set_value(4096).run()
    # GPT-3's positions are learned: the table grows, it does not extend
    learned = EN("seq_too_long_learned", seq_len=4096, model="gpt3-125m", limit=2048)
    assert [w.value for w in at.sidebar.warning] == [learned]


def test_bought_gpus_are_priced_by_the_documented_formula():
    at = run_app(pricing="bought", gpus=["h100-sxm"], purchases={"h100-sxm": 40000.0}, tco_utilisation=0.5)
    tco = TcoAssumptions()
    # the GPU's share of a DGX H100's wall power while training (planner/model/energy.py)
    wall_kw = 10.2 / 8 * DEFAULT_SETTINGS.power_fraction_of_max
    power = wall_kw * tco.pue * tco.electricity_usd_per_kwh
    fixed = (
        40000 * (1 - tco.residual_fraction) / tco.lifetime_years + tco.hosting_usd_per_gpu_month * 12
    ) / HOURS_PER_YEAR
    price = (fixed + tco.idle_power_fraction * power) / 0.5 + (1 - tco.idle_power_fraction) * power
    assert any(c.value == EN("amortised", gpu="h100-sxm", price=price) for c in at.sidebar.caption)
    request = request_for(gpus={"h100-sxm": None}, price_overrides={"h100-sxm": price})
    assert card(at)[EN("card_cost_bought")] == app_core.money(planned(request).plan.estimate.cost_usd)
    assert EN("card_cost") not in card(at)  # in Buy mode the cost says it is amortised
    open_tab(at, "tab_top")
    columns = table(at, EN("col_layout")).columns
    assert EN("col_cost_usd_bought") in columns
    # the at-risk cost and the rate are amortised too (review s28b)
    assert EN("col_cost_at_risk_usd_bought", risk="p80") in columns
    assert EN("col_price_usd_per_gpu_hour_bought") in columns
    assert EN("col_cost_at_risk_usd", risk="p80") not in columns


def test_the_cost_of_capital_slider_adds_its_rate_on_the_average_book_value():
    """Trial s36: no cost of capital could be set; 8 % a year on the average of the price and the
    resale value adds to the bought GPU's fixed cost per hour."""
    plain = run_app(pricing="bought", gpus=["h100-sxm"], purchases={"h100-sxm": 40000.0}, tco_utilisation=0.5)
    dear = run_app(
        pricing="bought", gpus=["h100-sxm"], purchases={"h100-sxm": 40000.0}, tco_utilisation=0.5, tco_capital=0.08
    )
    tco = TcoAssumptions()

    def price(at) -> float:
        (caption,) = [c.value for c in at.sidebar.caption if "h100-sxm" in c.value and "$" in c.value]
        return float(caption.split("$")[1].split()[0].replace(",", "").rstrip("/"))

    extra = 40000 * (1 + tco.residual_fraction) / 2 * 0.08 / HOURS_PER_YEAR / 0.5  # over the busy half
    assert price(dear) - price(plain) == pytest.approx(extra, abs=0.01)


def test_why_not_panel_shows_the_explore_answer():
    at = open_tab(run_app(), "tab_why_not")
    chosen = card(at)[EN("card_gpus")].split(" × ")[1]
    other = next(g for g in GPUS if g != chosen)
    at.selectbox(key="why_not_gpu").set_value(other).run()
    assert at.info[-1].value == plain(why_not(request_for(), other, settings=DEFAULT_SETTINGS))


def test_portfolio_mode_schedules_the_added_jobs():
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8}, pricing="bought")
    assert at.info[0].value == EN("no_jobs")
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    at.sidebar.selectbox(key="preset").set_value("gpt3-350m")
    at.text_input(key="job_name").set_value("larger")
    at.button(key="add_job").click().run()
    assert not at.exception
    requests = {
        "small": request_for(gpus={"h100-sxm": 8}),
        "larger": request_for(model=get_preset("gpt3-350m"), gpus={"h100-sxm": 8}),
    }
    expected = plan_portfolio(requests, {"h100-sxm": 8}, objective="cost", settings=DEFAULT_SETTINGS)
    shown = table(at, EN("col_start_days"))
    assert list(shown[EN("col_job")]) == [a.job for a in expected.assignments]
    assert list(shown[EN("col_num_gpus")]) == [a.num_gpus for a in expected.assignments]
    assert card(at)[EN("jobs_cost")] == app_core.money(expected.total_cost_usd)
    assert card(at)[EN("idle_cost")] == app_core.money(expected.idle_cost_usd)
    at.button(key="clear_jobs").click().run()
    assert at.info[0].value == EN("no_jobs")


def test_adding_a_job_offers_the_next_free_name():
    """Trial s44 app M5: a second Add job was refused ("job-1 is already in the list"): the name box
    still read the first job's name. It now offers the next free job-N."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8}, pricing="bought")
    assert at.text_input(key="job_name").value == "job-1"
    at.button(key="add_job").click().run()
    assert at.text_input(key="job_name").value == "job-2" and not at.error
    at.sidebar.selectbox(key="preset").set_value("gpt3-350m")
    at.button(key="add_job").click().run()
    assert not at.error and not at.exception and at.text_input(key="job_name").value == "job-3"
    assert list(table(at, EN("col_start_days"))[EN("col_job")]).count("job-2") == 1


def test_a_rented_portfolio_holds_no_gpus_whatever_the_table_caps():
    """Trial s39: under a rent price, a count in the GPU table (say from the explorer's Send to
    plan) made the portfolio price that type as owned, about 3x under its rent, unsaid; it is a
    quota there, as on the single-job page, and the table says each job's rate and basis."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8})
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert not at.exception
    request = request_for(gpus={"h100-sxm": 8})
    rented = plan_portfolio(
        {"small": request}, {"h100-sxm": 8}, objective="cost", settings=DEFAULT_SETTINGS, rented=frozenset({"h100-sxm"})
    )
    assert rented.held_types == ()
    assert card(at)[EN("jobs_cost")] == app_core.money(rented.total_cost_usd)
    assert EN("idle_cost") not in card(at) and EN("idle_cost_none") in [c.value for c in at.caption]
    shown = table(at, EN("col_owned"))  # the cost table under the schedule (trial s44 app L6)
    assert list(shown[EN("col_owned")]) == [EN("basis_rent")]
    from ui.render_portfolio import cost_per_gpu_hour

    assert list(shown[EN("col_usd_per_gpu_h")]) == [pytest.approx(cost_per_gpu_hour(rented.assignments[0]))]
    assert cost_per_gpu_hour(rented.assignments[0]) == pytest.approx(
        rented.assignments[0].plan.price_per_gpu_hour_usd, rel=0.01
    )


def test_a_portfolio_without_an_inventory_holds_no_idle_gpus():
    """trial s25: with no inventory the search's cap stood in for one, and 4,096 'owned' GPUs per
    type headlined millions of idle cost."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"])
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert EN("idle_cost") not in card(at) and EN("jobs_cost") in card(at)
    assert EN("idle_cost_none") in [c.value for c in at.caption]


def test_a_partial_inventory_counts_idle_cost_on_the_held_type_only():
    """Review s25: with one type held and one capped, the capped type's 4,096 GPUs counted as idle
    owned ones; they are rented, so only the held type idles."""
    gpus = ["h100-sxm", "a100-80gb-sxm"]
    at = run_app(portfolio_mode=True, gpus=gpus, inventory={"h100-sxm": 8}, pricing="bought")
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert not at.exception
    request = request_for(gpus={"h100-sxm": 8, "a100-80gb-sxm": None})
    inventory = {"h100-sxm": 8, "a100-80gb-sxm": 4096}
    expected = plan_portfolio(
        {"small": request}, inventory, objective="cost", settings=DEFAULT_SETTINGS, rented=frozenset({"a100-80gb-sxm"})
    )
    assert expected.held_types == ("h100-sxm",)
    # By hand: the 8 held H100s' fixed rate over the makespan, less the hours jobs used on them.
    from planner.api.explore import owned_rates
    from planner.catalog.hardware import load_catalog
    from planner.search.ownership import TcoAssumptions

    held = owned_rates(load_catalog(), {"h100-sxm": 8}, TcoAssumptions(), DEFAULT_SETTINGS)["h100-sxm"]
    used = sum(a.num_gpus * (a.end_s - a.start_s) for a in expected.assignments if a.gpu_id == "h100-sxm")
    idle_hours = (8 * expected.makespan_s - used) / 3600
    assert expected.idle_cost_usd == pytest.approx(held.held_usd_per_gpu_hour * idle_hours, rel=1e-6, abs=1e-6)
    assert card(at)[EN("idle_cost")] == app_core.money(expected.idle_cost_usd)
    assert card(at)[EN("jobs_cost")] == app_core.money(expected.total_cost_usd)


def test_local_gpu_panel_is_a_note_without_a_driver_and_a_run_button_with_gpus(monkeypatch):
    from planner.catalog import detect
    from planner.catalog.detect import NoGPUDriver

    def no_driver(catalog):
        raise NoGPUDriver("no NVIDIA driver found")

    def one_h100(catalog):
        return [DetectedGPU(0, "NVIDIA H100 80GB HBM3", 80 * 2**30, "550.54", catalog.gpu("h100-sxm"))]

    try:
        monkeypatch.setattr(detect, "detect_gpus", no_driver)
        st.cache_resource.clear()
        at = open_tab(run_app(), "tab_local")
        assert any(c.value == f"{EN('no_local_gpus')} (no NVIDIA driver found)." for c in at.caption)
        assert not [b for b in at.button if b.key == "run_local"]
        monkeypatch.setattr(detect, "detect_gpus", one_h100)
        st.cache_resource.clear()
        at = open_tab(run_app(), "tab_local")
        assert table(at, EN("col_catalog")).iloc[0, 1] == "NVIDIA H100 80GB HBM3"
        assert at.button(key="run_local").label == EN("run_local", count=1, gpu="h100-sxm")
    finally:
        st.cache_resource.clear()


# --------------------------------------------------------------------------- helpers without Streamlit


def test_labels_exist_in_both_languages_with_the_same_placeholders():
    fields = lambda text: {name for _, name, _, _ in string.Formatter().parse(text) if name}  # noqa: E731
    en, zh = all_labels("en"), all_labels("zh")
    assert set(LANGUAGE_NAMES) == {"en", "zh"} and en.keys() == zh.keys() == set(label_keys())
    for key in label_keys():
        assert en[key].strip() and zh[key].strip(), key
        assert fields(en[key]) == fields(zh[key]), key
    same = sorted(k for k in en if en[k] == zh[k])
    names = ["card_mfu", "col_gpu", "col_mfu", "col_rank", "feature_fp8", "feature_moe", "feature_pp", "feature_tp"]
    assert same == names, same  # names that are not translated
    with pytest.raises(ValueError, match="language 'fr'"):
        Labels("fr")


def test_model_from_upload_names_the_upload_and_leaves_no_files(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spec = app_core.model_from_upload((HF_CONFIGS / "mistral.json").read_bytes(), "my model.json")
    assert spec == model_from_hf_config(HF_CONFIGS / "mistral.json").model_copy(update={"name": spec.name})
    with pytest.raises(ValueError, match=r"^cfg\.json: top level must be a JSON object"):
        app_core.model_from_upload(b"[1, 2]", "cfg.json")
    with pytest.raises(ValueError, match="over the 1 MB limit"):
        app_core.model_from_upload(b"{" + b" " * 1_000_000 + b"}", "big.json")
    assert list(tmp_path.iterdir()) == []


def test_amortised_price_by_hand():
    tco = TcoAssumptions(
        lifetime_years=4, residual_fraction=0.2, pue=1.3, electricity_usd_per_kwh=0.1, hosting_usd_per_gpu_month=150
    )
    # (30000 * 0.8 / 4 + 150 * 12) / (8766 * 0.5) for the fixed cost; 560 W at the wall x 1.3 x
    # $0.1/kWh = $0.0728 per training hour, of which the idle 20 % is paid every hour (/ 0.5)
    power = 0.56 * 1.3 * 0.1
    expected = 7800 / 4383 + 0.2 * power / 0.5 + 0.8 * power
    assert app_core.amortised_price_per_gpu_hour(30000, 560, 0.5, tco) == pytest.approx(expected)
    with pytest.raises(ValueError, match="utilisation"):
        app_core.amortised_price_per_gpu_hour(30000, 560, 0.0, tco)


def test_formatting():
    assert app_core.money(9.349) == "$9.35" and app_core.money(12_345.6) == "$12,346"
    assert app_core.money(2_500_000) == "$2.50M"
    assert app_core.duration_key(10.0) == ("hours_value", 10.0) and app_core.duration_key(72.0) == ("days_value", 3.0)


def test_job_zip_holds_a_runnable_job_for_the_plan(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    chosen = planned(request_for()).plan
    data = app_jobs.emit_job_zip(chosen, "my-job", steps=7)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        spec = JobSpec.model_validate_json(archive.read("my-job/job.json"))
        launch_mode = archive.getinfo("my-job/launch.sh").external_attr >> 16
    assert {"my-job/job.json", "my-job/launch.sh", "my-job/slurm.sbatch", "my-job/k8s.yaml"} <= names
    assert spec.plan == chosen and spec.run.steps == 7 and spec.name == "my-job"
    assert launch_mode & 0o100
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="job name"):
        app_jobs.emit_job_zip(chosen, "bad name!", steps=7)


def test_read_metrics_tolerates_partial_lines_and_nan(tmp_path):
    path = tmp_path / "metrics.jsonl"
    assert app_jobs.read_metrics(path).empty
    path.write_text(
        '{"step": 1, "loss": 5.0, "tokens_per_s": 100.0}\n{"step": 2, "loss": "nan", "tokens_per_s": 90}\n'
        '{"step": 3, "lo'
    )
    frame = app_jobs.read_metrics(path)
    assert list(frame["step"]) == [1, 2] and frame["loss"].isna().tolist() == [False, True]


def test_figures_carry_the_plan_numbers():
    result = planned(request_for())
    plans = [result.plan, *result.alternatives]
    memory = figures.memory_figure(plans, 0.6, EN)
    bars = [t for t in memory.data if t.type == "bar"]
    for i, p in enumerate(plans):
        stacked = sum(t.x[i] for t in bars)  # horizontal bars: one row per plan
        assert stacked == pytest.approx(max(p.estimate.memory.reserved_gib, p.estimate.memory.peak_gib) + 0.6)
    capacity = next(t for t in memory.data if t.name == EN("capacity"))
    assert list(capacity.x) == [p.estimate.memory.capacity_gib for p in plans]
    # each plan's capacity mark spans its own bar only (issue 30: no spill onto the next bar)
    marks = [s for s in memory.layout.shapes if s.line.color == "crimson"]
    assert [(m.x0, m.y1 - m.y0) for m in marks] == [(c, pytest.approx(0.9)) for c in capacity.x]
    # the front's points carry their 80 % band as error bars; the chosen plan's is its own band
    frame = best_per_count(scored_search(request_for()).frame)
    fig = figures.frontier_figure(frame, pareto_front(frame), result.plan, EN)
    front = next(t for t in fig.data if t.name == EN("pareto_front"))
    assert len(front.error_x.array) == len(front.x) > 1 and min(front.error_x.array) > 0
    star = next(t for t in fig.data if t.name == EN("chosen_plan"))
    u = result.plan.estimate.uncertainty
    assert star.error_x.array[0] == pytest.approx((u.time_to_train_h[1] - result.plan.estimate.time_to_train_h) / 24)
    step = figures.step_time_figure(plans, ZH)
    assert sum(t.x[0] for t in step.data if t.type == "bar") == pytest.approx(result.plan.estimate.time.step_s)
    assert ZH("time_matmul") in {t.name for t in step.data}


def test_the_memory_and_step_bars_carry_their_band_and_the_axis_reaches_its_top():
    """app53 M2: the stacked bars showed no band (the cost and scaling charts did), and the step
    axis stopped at 20 under a 23 s step."""
    result = planned(request_for())
    plans = [result.plan, *result.alternatives]
    for tr in (EN, ZH):
        memory, step = figures.memory_figure(plans, 0.6, tr), figures.step_time_figure(plans, tr)
        for fig, bands, ends in (
            (
                memory,
                [p.estimate.memory_band.reserved_gib for p in plans],
                [p.estimate.memory.reserved_gib for p in plans],
            ),
            (step, [p.estimate.uncertainty.step_s for p in plans], [p.estimate.time.step_s for p in plans]),
        ):
            (whiskers,) = [t for t in fig.data if t.name == tr("chart_band")]
            for i, ((lo, hi), end) in enumerate(zip(bands, ends, strict=True)):
                assert whiskers.error_x.array[i] == pytest.approx(hi - end) and hi > end
                assert whiskers.error_x.arrayminus[i] == pytest.approx(end - lo) and lo < end
            tops = [x + plus for x, plus in zip(whiskers.x, whiskers.error_x.array, strict=True)]
            assert fig.layout.xaxis.range[0] == 0 and fig.layout.xaxis.range[1] > max(tops)
        capacity = max(p.estimate.memory.capacity_gib for p in plans)
        assert memory.layout.xaxis.range[1] > capacity  # the capacity mark stays on the chart


@pytest.mark.slow
def test_local_run_trains_the_local_plan_and_shows_live_metrics(monkeypatch):
    """End to end on CPU: detected GPUs (faked) -> plan for them -> emitted job -> trainer.launch -> metrics."""
    import os
    import shutil
    import signal

    from planner.catalog import detect

    def one_h100(catalog):
        return [DetectedGPU(0, "NVIDIA H100 80GB HBM3", 80 * 2**30, "550.54", catalog.gpu("h100-sxm"))]

    monkeypatch.setattr(detect, "detect_gpus", one_h100)
    st.cache_resource.clear()
    # fp32: CPUs without native bf16 run bf16 matmuls ~15x slower (2 s per step here instead of minutes);
    # the flow under test does not depend on the precision, nor on the model: custom dimensions
    # a twentieth of the tiny preset's (whose 8K-token steps took 7 s each on one CPU).
    dims = dict(num_layers=2, hidden_size=64, ffn_hidden_size=128, num_heads=4, num_kv_heads=2, vocab_size=512)
    custom = {CUSTOM_FIELDS[field]: value for field, value in dims.items()}
    at = open_tab(
        run_app(
            model_source="custom",
            **custom,
            gpus=["h100-sxm"],
            seq_len=512,
            global_batch=8192,
            run_steps=2,
            precision="fp32",
        ),
        "tab_local",
    )
    at.button(key="run_local").click().run()
    run = at.session_state["local_run"]
    try:
        assert run.process.wait(timeout=180) == 0, (run.job_dir / "run.log").read_text()[-2000:]
        at.run()
        assert any(m.value.startswith(f"**{EN('run_finished', code=0)}**") for m in at.markdown)
        metrics = app_jobs.read_metrics(run.job_dir / "metrics.jsonl")
        assert list(metrics["step"]) == [1, 2]
        assert card(at)[EN("loss")] == f"{metrics['loss'].iloc[-1]:.4f}"
        local = request_for(
            model=ModelSpec(name="custom", max_seq_len=max(SEQ_LENS), **dims),
            gpus={"h100-sxm": 1},
            seq_len=512,
            global_batch_tokens=8192,
            max_gpus=1,
            top_k=0,
            precision=Precision.FP32,
        )
        assert JobSpec.load(run.job_dir).plan == planned(local).plan
    finally:
        if run.process.poll() is None:
            os.killpg(run.process.pid, signal.SIGKILL)
        shutil.rmtree(run.job_dir.parent, ignore_errors=True)
        st.cache_resource.clear()


def test_why_not_offers_only_the_types_the_request_can_run_on():
    """fp8: an A100 is left out of the search (it has no fp8), so it is not offered as a loser
    either; asking for it had raised out of the panel (trial s23)."""
    at = open_tab(run_app(gpus=["h100-sxm", "a100-80gb-sxm"], precision="fp8"), "tab_why_not")
    assert "a100-80gb-sxm" not in at.selectbox(key="why_not_gpu").options
    assert "h100-sxm" in at.selectbox(key="why_not_gpu").options


def test_the_card_says_the_price_behind_its_cost_and_where_it_comes_from():
    """Trial s26: no cost said its $/GPU-h, nor that the H800's is an estimate (no on-demand offer)."""
    at = run_app(gpus=["h800"])
    captions = [c.value for c in at.caption]
    assert "Cost at $5.07/GPU-h: an estimate, not a median of listed on-demand offers." in captions
    at = run_app(gpus=["h100-sxm"], prices={"h100-sxm": 2.5})
    assert "Cost at $2.50/GPU-h: your price." in [c.value for c in at.caption]
    from planner.catalog.prices import PriceBasis
    from ui.plan_card import PRICE_BASIS_KEYS

    assert set(PRICE_BASIS_KEYS) == set(PriceBasis)  # every basis worded, in both languages
    assert all(ZH(key) != EN(key) for key in PRICE_BASIS_KEYS.values())


def test_a_portfolio_job_takes_the_sidebars_stack_and_its_modules():
    """Review s26: a job added under trainplan (gemma2: Hugging Face's modules) and solved under
    megatron-core kept impl hf, which megatron-core refuses on its own."""
    from planner.layout import Implementation
    from planner.model.stacks import Stack
    from ui.cached import portfolio_requests

    job = request_for(model=get_preset("gemma2-9b"), gpus={"h100-sxm": 8})
    assert job.impl == Implementation.HF
    (request,) = portfolio_requests((("a", job.model_dump_json()),), Stack.MEGATRON_CORE, None).values()
    assert (request.stack, request.impl) == (Stack.MEGATRON_CORE, Implementation.NATIVE)
    (back,) = portfolio_requests((("a", request.model_dump_json()),), Stack.TRAINPLAN, "ib-ndr-400").values()
    assert (back.impl, back.network) == (Implementation.HF, "ib-ndr-400")


def test_a_portfolio_prices_held_gpus_at_the_tables_purchase_price():
    """Trial s26b: a portfolio's held GPUs cost the catalog's purchase estimate whatever the table
    said; the table's purchase price now sets their owned rate."""
    at = run_app(
        portfolio_mode=True,
        gpus=["h100-sxm"],
        inventory={"h100-sxm": 8},
        purchases={"h100-sxm": 150_000},
        pricing="bought",
    )
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert not at.exception
    request = request_for(gpus={"h100-sxm": 8})
    dear = plan_portfolio(
        {"small": request}, {"h100-sxm": 8}, settings=DEFAULT_SETTINGS, purchase_usd={"h100-sxm": 150_000}
    )
    cheap = plan_portfolio({"small": request}, {"h100-sxm": 8}, settings=DEFAULT_SETTINGS)
    assert dear.total_cost_usd > cheap.total_cost_usd
    assert card(at)[EN("jobs_cost")] == app_core.money(dear.total_cost_usd)


def test_a_price_kind_no_allowed_gpu_offers_says_so():
    """Trial s26b: with only an H800 ticked, spot pricing said "Allow at least one GPU type"."""
    at = run_app(gpus=["h800"], pricing="spot")
    assert any("No allowed GPU type has a spot offer (h800)" in e.value for e in at.error)


def test_a_bought_portfolio_without_an_inventory_is_not_called_rented():
    """Trial s26b: in Buy mode with no inventory the caption said each type is rented by the hour,
    while the jobs were priced at the amortised purchase rate."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], pricing="bought")
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    captions = [c.value for c in at.caption]
    assert EN("idle_cost_none_bought") in captions and EN("idle_cost_none") not in captions


def test_a_reserved_portfolio_shows_its_terms_bill_and_what_it_pays_in_all():
    """Session 44: under a reserved kind the portfolio reserves its rented types for whole terms
    and chooses on that bill; the page showed the jobs' cost alone. It says the reserved GPUs,
    their terms' bill and the total billed, in both languages."""
    for tr in (EN, ZH):
        at = run_app(
            portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8}, pricing="reserved_1y", lang=tr.lang
        )
        at.button(key="add_job").click().run()
        assert not at.exception
        request = request_for(gpus={"h100-sxm": 8}, price_kind="reserved-1y")
        expected = plan_portfolio(
            {"job-1": request},
            {"h100-sxm": 8},
            objective="cost",
            settings=DEFAULT_SETTINGS,
            rented=frozenset({"h100-sxm"}),
        )
        (r,) = expected.reserved
        said = [w.value for w in at.warning if str(r.gpu_id) in w.value and app_core.money(r.cost_usd) in w.value]
        assert len(said) == 1, [w.value for w in at.warning]
        assert tr("portfolio_billed", total=app_core.money(expected.billed_usd)) in [c.value for c in at.caption]
        assert tr.lang == "en" or not english_sentences(said[0])


def test_the_headline_cost_and_its_band_are_written_in_one_unit():
    """app53 L1: the card read "$809,754" over "80 % band $0.64M–$1.22M" (planner.fmt.money_band_parts'
    rule: not $993,000 ($0.90M-$1.10M))."""
    e = planned(request_for()).plan.estimate
    assert e.uncertainty is not None
    crossing = e.model_copy(
        update={"cost_usd": 809_754.0, "uncertainty": e.uncertainty.model_copy(update={"cost_usd": (640e3, 1.22e6)})}
    )
    assert cost_parts(crossing) == ("$0.81M", ("$0.64M", "$1.22M"))
    assert figure_bands(EN, crossing)["cost_usd"] == EN("card_band", lo="$0.64M", hi="$1.22M")
    small = crossing.model_copy(
        update={"cost_usd": 42.5, "uncertainty": e.uncertainty.model_copy(update={"cost_usd": (30.0, 61.0)})}
    )
    assert cost_parts(small) == ("$42.50", ("$30.00", "$61.00"))  # cents on all three below $100

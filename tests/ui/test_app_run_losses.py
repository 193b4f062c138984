"""The sidebar's run-loss figures (ui/sidebar_losses.py, the CLI's --failure-rate-x .. --startup-minutes):
each reaches the request the app plans, the card's goodput and its "on your figures" line, the explorer
and the job list; empty boxes leave the plan as it was; the 中文 page says it all in Chinese."""

from __future__ import annotations

import pytest
from support.app import EN, ZH, card, english_sentences, open_tab, planned, request_for, run_app

from planner.model.run_loss_inputs import DEFAULT_RUN_LOSSES, RUN_LOSS_MAX, RunLossInputs
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stacks import Stack
from ui.cached import portfolio_requests
from ui.i18n_run_losses import LOSS_KEYS
from ui.number_box import number_text

FIGURES = RunLossInputs(failure_rate_x=4, data_stall_pct=5)
EVERY_FIGURE = RunLossInputs(
    failure_rate_x=0, checkpoint_write_gb_per_s=20, restart_minutes=3, data_stall_pct=5, eval_pct=1, startup_minutes=2
)


def boxes(figures: RunLossInputs) -> dict[str, float]:
    """The sidebar's state that types ``figures`` into their boxes."""
    return {LOSS_KEYS[name]: value for name, value in figures.given().items()}


def goodput(at, tr=EN) -> str:
    return card(at)[tr("card_goodput")]


def shown_goodput(figures: RunLossInputs) -> str:
    """The card's goodput of the API's plan of the app's default request with ``figures``."""
    g = planned(request_for(run_losses=figures)).plan.estimate.goodput
    assert g is not None
    return f"{g.goodput_fraction:.1%}"


def test_empty_boxes_keep_the_defaults_and_the_plan_unchanged():
    at = run_app()
    for name, key in LOSS_KEYS.items():
        box = at.sidebar.number_input(key=key)
        assert box.value is None and box.proto.placeholder == EN(f"loss_default_{name}")
    assert goodput(at) == shown_goodput(DEFAULT_RUN_LOSSES)
    assert not [c.value for c in at.caption if c.value.startswith(EN("card_run_losses", words="")[:8])]
    # the defaults each placeholder names are the settings' own
    assert EN("loss_default_restart_minutes") == f"default {DEFAULT_SETTINGS.restart_overhead_s / 60:g}"
    assert EN("loss_default_eval_pct") == f"default {DEFAULT_SETTINGS.eval_time_fraction * 100:g}"


def test_figures_reach_the_request_the_card_and_the_explorer():
    """Four times the failures and 5 % input stalls: the card shows the API's goodput on them and
    says so under it; emptied again, the default plan comes back."""
    at = run_app(**boxes(FIGURES))
    assert goodput(at) == shown_goodput(FIGURES) != shown_goodput(DEFAULT_RUN_LOSSES)
    assert EN("card_run_losses", words="failure rate 4×, input stalls 5%") in [c.value for c in at.caption]
    times = [m.value for m in open_tab(at, "tab_explorer").metric if m.label == EN("card_time")]
    assert len(times) == 2 and times[0] == times[1]  # "start from the chosen plan": the card's figures
    for key in boxes(FIGURES):
        at.sidebar.number_input(key=key).set_value(None).run()
    assert goodput(at) == shown_goodput(DEFAULT_RUN_LOSSES)
    times_default = [m.value for m in at.metric if m.label == EN("card_time")]
    assert times_default[0] == times_default[1] != times[0]


@pytest.mark.parametrize("tr", [EN, ZH], ids=["en", "zh"])
def test_every_figure_on_the_card_in_the_pages_language(tr):
    at = run_app(lang=tr.lang, **boxes(EVERY_FIGURE))
    words = [tr(f"loss_words_{key}", value=shown) for key, shown in EVERY_FIGURE.said()]  # no failures first
    assert words[0] == tr("loss_words_no_failures")
    line = tr("card_run_losses", words=tr.join(words))
    assert line in [c.value for c in at.caption]
    assert card(at)[tr("card_mttf")] == "-"  # failure rate 0: no failures modelled
    if tr.lang == "en":
        assert line == (
            "Goodput on your figures: no failures, checkpoint write 20 GB/s, restart 3 min, input stalls 5%,"
            " evaluation 1%, start-up 2 min."
        )
        return
    assert not english_sentences(line), line
    (expander,) = [e for e in at.sidebar.expander if e.label == ZH("run_losses")]
    texts = [expander.label, ZH("run_losses_caption")]
    for key in LOSS_KEYS.values():
        box = at.sidebar.number_input(key=key)
        texts += [box.label, box.help, box.proto.placeholder]
    left = [(text, english_sentences(text)) for text in texts if english_sentences(text)]
    assert not left, left


@pytest.mark.parametrize("tr", [EN, ZH], ids=["en", "zh"])
def test_a_figure_out_of_range_keeps_the_default_and_says_so(tr):
    """A bandwidth of 0 (a write must take time) and a failure rate over the CLI's bound: each box
    goes back to empty, the default, and says the range it takes."""
    at = run_app(lang=tr.lang)
    key = LOSS_KEYS["checkpoint_write_gb_per_s"]
    at.sidebar.number_input(key=key).set_value(0.0).run()
    high = number_text(RUN_LOSS_MAX["checkpoint_write_gb_per_s"])
    words = dict(label=tr(key), range=tr("number_range_above", low="0", high=high), value="0")
    assert tr("number_out_of_range", **words, kept=tr("loss_default_checkpoint_write_gb_per_s")) in [
        w.value for w in at.warning
    ]
    assert at.sidebar.number_input(key=key).value is None and goodput(at, tr) == shown_goodput(DEFAULT_RUN_LOSSES)
    key = LOSS_KEYS["failure_rate_x"]
    at.sidebar.number_input(key=key).set_value(RUN_LOSS_MAX["failure_rate_x"] + 1).run()
    assert at.sidebar.number_input(key=key).value is None and not at.exception


def test_a_job_added_to_the_portfolio_keeps_its_figures():
    """A job is its request when added: its figures stay with it whatever the sidebar's stack."""
    job = request_for(run_losses=FIGURES).model_dump_json()
    (request,) = portfolio_requests((("a", job),), Stack.TORCHTITAN, None).values()
    assert request.run_losses == FIGURES and request.stack == Stack.TORCHTITAN


def test_the_clis_help_is_the_apps_english_help():
    """One source of each figure's words: the flag's help is the box's tooltip in English."""
    from ui import cli_run_losses

    for name in LOSS_KEYS:
        option = getattr(cli_run_losses, name.upper())
        assert option.help == EN(f"loss_help_{name}") and option.param_decls == ("--" + name.replace("_", "-"),)


def test_a_language_switch_keeps_the_figures():
    at = run_app(**boxes(FIGURES))
    at.sidebar.radio(key="lang").set_value("zh").run()
    assert at.sidebar.number_input(key=LOSS_KEYS["failure_rate_x"]).value == FIGURES.failure_rate_x
    assert ZH("card_run_losses", words="故障率 4 倍、输入停顿 5%") in [c.value for c in at.caption]


def test_the_portfolio_says_which_jobs_days_rest_on_the_figures_in_both_languages():
    """App trial s48: portfolio's CLI says which jobs' days rest on the jobs file's run-loss figures
    (``by_job``: one line where all share them, else one per job); the page said none."""
    from planner.model.run_loss_inputs import by_job
    from ui.plan_card import jobs_run_losses_texts, loss_words

    same = {"a": FIGURES, "b": FIGURES}
    assert by_job(same) == ((None, FIGURES),) and by_job({"a": DEFAULT_RUN_LOSSES}) == ()
    assert by_job({"a": FIGURES, "b": DEFAULT_RUN_LOSSES}) == (("a", FIGURES),)
    assert by_job({"a": FIGURES}) == (("a", FIGURES),)  # one job: named
    for tr in (EN, ZH):
        at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8}, lang=tr.lang, **boxes(FIGURES))
        at.text_input(key="job_name").set_value("small")
        at.button(key="add_job").click().run()
        assert not at.exception
        (line,) = jobs_run_losses_texts(tr, {"small": FIGURES})
        assert line == tr("portfolio_run_losses_job", job="small", words=loss_words(tr, FIGURES))
        assert line in [c.value for c in at.caption]
        assert tr.lang == "en" or not english_sentences(line)

"""The sizing app's sidebar: its widgets, read into a ``PlanRequest`` (``Inputs``) for ``app.py``.

Widgets only: every number shown here (token budgets, amortised prices) comes from
``ui.app_core``, every label from ``ui.i18n``. Widget values live in
``st.session_state`` under the widgets' keys, set once by ``init_state``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import streamlit as st

from planner.accuracy import Risk
from planner.api import PlanRequest
from planner.catalog.hardware import Catalog
from planner.catalog.models import get_preset, list_presets
from planner.layout import Precision
from planner.limits import (
    MAX_BUDGET_USD,
    MAX_CHINCHILLA_MULTIPLE,
    MAX_DAYS,
    MAX_ELECTRICITY_USD_PER_KWH,
    MAX_GPUS,
    MAX_HOSTING_USD_PER_GPU_MONTH,
    MAX_LIFETIME_YEARS,
    MAX_PUE,
    MAX_TRAINING_TOKENS,
)
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.model.structure import context_extension
from planner.search.ownership import TcoAssumptions
from ui import app_core
from ui.calibration_upload import CalibrationUpload
from ui.gpu_table import PRICE_KIND_OF, ROWS_KEY, GpuChoice, default_rows, gpu_table, with_price_kind
from ui.i18n import LANGUAGE_NAMES, Labels, plain
from ui.number_box import number_box
from ui.reasons import (
    LAYOUT_REASONS,
    MODEL_REASONS,
    Refusal,
    config_reason_text,
    reason_text,
    refusal,
)
from ui.sidebar_losses import sidebar_run_losses
from ui.sidebar_stack import ac_modes_for_stack, optimizer_choice, sidebar_stack

SEQ_LENS = tuple(2**k for k in range(9, 18))  # 512 .. 131072
GLOBAL_BATCHES = (0, *(2**k for k in range(13, 25)))  # 0 = the planner's default; 8K .. 16M
# Choice widgets whose option labels are translated (format_func=tr...), on the whole page: the
# language switch lives here, so it re-sends these and the open tab of app.py's main area.
TRANSLATED_CHOICES = (
    "model_source", "tokens_mode", "objective", "pricing", "global_batch", "ac", "why_not_gpu", "ex_ac", "attention",
    "network", "portfolio_answer",
)  # fmt: skip
CUSTOM_FIELDS = {  # ModelSpec field -> its widget key (and label key)
    "num_layers": "custom_layers",
    "hidden_size": "custom_hidden",
    "ffn_hidden_size": "custom_ffn",
    "num_heads": "custom_heads",
    "num_kv_heads": "custom_kv_heads",
    "vocab_size": "custom_vocab",
    "num_experts": "custom_experts",
    "experts_per_token": "custom_experts_per_token",
}
TAB_NAMES = (
    "tab_breakdowns", "tab_explore", "tab_top", "tab_why_not", "tab_downloads", "tab_explorer", "tab_run", "tab_local",
)  # fmt: skip


@dataclass(frozen=True)
class Inputs:
    request: PlanRequest
    headroom: float  # memory headroom fraction (ModelingSettings.memory_headroom)
    portfolio_mode: bool
    bought: bool = False  # GPU prices are amortised purchases, not rent
    calibration: CalibrationUpload | None = None  # an uploaded calibration file the catalog takes
    purchases: dict[str, float] = dataclasses.field(default_factory=dict)  # the table's purchase USD per allowed type
    tco: TcoAssumptions | None = None  # the ownership assumptions (Buy mode; None: the defaults)
    rents: dict[str, float] = dataclasses.field(default_factory=dict)  # the table's own rents (GpuChoice.rents)
    left_out: tuple[str, ...] = ()  # allowed types the price kind has no offer of (GpuChoice.left_out)
    # the stack the request runs where the sidebar's cannot (issue 27: ALiBi under megatron-lm), said
    # under the page's title (app48: drawn from the sidebar's code, it stood above the title)
    stack_note: str | None = None

    @property
    def key(self) -> str:
        return self.request.model_dump_json()


def keep_choices() -> None:
    """Keep every choice across a language switch.

    The browser holds a choice widget's value as its displayed label, which the switch changes;
    assigning each value again (in this callback, before the rerun) sends it with the new labels.
    """
    # every widget, not only those with translated options: a widget whose label changes is a new
    # widget to the browser, and one whose value was last restored from KEPT (the preset after
    # Preset -> config.json -> Preset) would otherwise come back at its first option
    # Values come from KEPT (the end of the last run: a language switch changes nothing else), since
    # the browser may send such a widget's first option instead.
    kept = st.session_state.get(KEPT, {})
    for key in (*TRANSLATED_CHOICES, *kept):
        if key != "lang" and (key in kept or key in st.session_state):
            st.session_state[key] = kept.get(key, st.session_state.get(key))
    open_tab = st.session_state.get("main_tab")
    new = Labels(st.session_state["lang"])
    for name in TAB_NAMES:  # the open tab is stored as its label
        if open_tab in [Labels(lang)(name) for lang in LANGUAGE_NAMES]:
            st.session_state["main_tab"] = new(name)


KEPT = "_kept"  # widget values as of the end of the last run (not a widget key: Streamlit never drops it)


def init_state(cat: Catalog) -> None:
    """Widget values live in session_state (set once here), so widgets never get a second default.

    Streamlit drops the value of a widget that a run does not draw (the preset selectbox while the
    source is config.json); such a value comes back from ``KEPT``, so Preset -> config.json ->
    Preset finds the preset and token budget as they were.
    """
    kept = st.session_state.setdefault(KEPT, {})
    for key, value in app_core.widget_defaults(cat).items():
        if key not in st.session_state:
            st.session_state[key] = kept.get(key, value)
    st.session_state.setdefault(ROWS_KEY, default_rows(cat))
    st.session_state.setdefault("portfolio_jobs", {})
    st.session_state.setdefault("portfolio_releases", {})  # job -> its start_after_days, where set
    st.session_state.setdefault("portfolio_after", {})  # job -> the jobs it starts after, where any


def keep_values(cat: Catalog) -> None:
    """At the end of a run: remember every widget's value (see init_state)."""
    keys = app_core.widget_defaults(cat)
    st.session_state[KEPT] = {key: st.session_state[key] for key in keys if key in st.session_state}


def sidebar_model(tr: Labels) -> ModelSpec | None:
    source = st.radio(
        tr("model_source"), ("preset", "upload", "custom"), key="model_source", format_func=tr.option, horizontal=True
    )
    if source == "preset":
        return get_preset(st.selectbox(tr("preset"), list_presets(), key="preset", on_change=fit_seq_len))
    if source == "upload":
        uploaded = st.file_uploader(
            tr("upload_config"),
            type=["json"],
            key="config_upload",
            max_upload_size=app_core.UPLOAD_LIMIT_MB,
            help=tr("upload_help"),
        )
        if uploaded is None:
            st.info(tr("upload_needed"))  # also what a file the browser refused (over the cap, marked red) leaves
            return None
        try:
            return app_core.model_from_upload(uploaded.getvalue(), uploaded.name)
        except app_core.UploadTooLarge as exc:  # one the browser let through (Windows counts 1 MB as 2**20 bytes)
            size_mb = exc.size_bytes / 1e6
            st.error(tr("upload_too_big", name=exc.name, size_mb=size_mb, limit_mb=app_core.UPLOAD_LIMIT_MB))
            return None
        except ValueError as exc:  # the reader's rule in the page's language (ui/reasons.py)
            st.error(tr("bad_config", error=config_reason_text(tr, refusal(exc))))
            return None
    return custom_model(tr)


def fit_seq_len() -> None:
    """On a preset change, shorten the sequence to the model's context if it is longer (the trainer refuses)."""
    limit = get_preset(st.session_state["preset"]).max_seq_len
    if st.session_state.get("seq_len", 0) > limit:
        st.session_state["seq_len"] = max((s for s in SEQ_LENS if s <= limit), default=SEQ_LENS[0])


def custom_model(tr: Labels) -> ModelSpec | None:
    dims = {}
    left, right = st.columns(2)
    for i, (field, key) in enumerate(CUSTOM_FIELDS.items()):
        dims[field] = number_box(left if i % 2 == 0 else right, tr, key, key=key, min_value=1, step=1)
    try:
        return ModelSpec(name="custom", max_seq_len=max(SEQ_LENS), **dims)
    except ValueError as exc:
        st.error(tr("bad_custom", error=custom_error(tr, refusal(exc, where=False))))
        return None


def custom_error(tr: Labels, refused: Refusal) -> str:
    """ModelSpec's refusal in the page's language, naming the fields by their labels on screen."""
    if tr.lang == "en":
        return on_screen_names(tr, refused.message)
    names = {key: f"“{tr(key)}”" for key in CUSTOM_FIELDS.values()}
    return reason_text(tr, refused, MODEL_REASONS, **names)


def on_screen_names(tr: Labels, message: str) -> str:
    """A ModelSpec error with its field names (num_kv_heads) replaced by the labels on screen ("Key/value heads")."""
    for field in sorted(CUSTOM_FIELDS, key=len, reverse=True):  # num_kv_heads before num_heads
        message = re.sub(rf"\b{field}\b", f"“{tr(CUSTOM_FIELDS[field])}”", message)
    return message


def sidebar_tokens(tr: Labels, model: ModelSpec | None) -> float | None:
    """The token budget; drawn even while there is no model yet (an upload pending), so its value stays."""
    mode = st.radio(
        tr("tokens_mode"), ("chinchilla", "absolute"), key="tokens_mode", format_func=tr.option, horizontal=True
    )
    if mode == "chinchilla":
        multiple = number_box(
            st,
            tr,
            "chinchilla_multiple",
            min_value=0.01,
            max_value=float(MAX_CHINCHILLA_MULTIPLE),
            step=0.5,
            key="chinchilla_multiple",
        )
        if model is None:
            return None
        tokens = app_core.chinchilla_tokens(model, multiple)
    else:
        tokens = (
            number_box(
                st,
                tr,
                "tokens_billions",
                min_value=0.001,
                max_value=MAX_TRAINING_TOKENS / 1e9,
                step=10.0,
                format="%g",  # trial s39: the minimum, 0.001 B, showed as "0.00"
                key="tokens_billions",
            )
            * 1e9
        )
        if model is None:
            return None
    st.caption(tr("model_summary", name=model.name, params=model.num_params() / 1e9, tokens=billions(tokens)))
    return tokens


def billions(tokens: float) -> str:
    """'160.6' billion; two significant figures below one billion (trial s33: 0.001 B read '0.0 B')."""
    value = tokens / 1e9
    return f"{value:,.1f}" if value >= 1 else f"{value:.2g}"


def sidebar_goals(tr: Labels) -> dict:
    deadline = number_box(
        st, tr, "deadline_days", min_value=0.0, max_value=float(MAX_DAYS), step=1.0, key="deadline_days"
    )
    budget = number_box(  # whole dollars: "60000000.00" read as cents (trial s44 app L4)
        st, tr, "budget_usd", min_value=0.0, max_value=MAX_BUDGET_USD, step=1000.0, format="%.0f", key="budget_usd"
    )
    objective = st.radio(
        tr("objective"), ("cost", "time", "mix"), key="objective", format_func=tr.option, horizontal=True
    )
    weight = 0.5
    if objective == "mix":
        weight = st.slider(tr("cost_weight"), 0.0, 1.0, step=0.05, key="cost_weight")
    risk = st.radio(tr("risk"), [r.value for r in Risk], key="risk", horizontal=True, help=tr("risk_help"))
    return dict(
        deadline_days=deadline or None, budget_usd=budget or None, objective=objective, cost_weight=weight, risk=risk
    )


def sidebar_gpus(tr: Labels, cat: Catalog) -> GpuChoice | None:
    options = ("on_demand", *PRICE_KIND_OF, "bought")
    pricing = st.radio(tr("pricing"), options, key="pricing", format_func=tr.option, horizontal=True)
    tco, utilisation = ownership_inputs(tr) if pricing == "bought" else (None, None)
    choice = gpu_table(tr, cat, tco, utilisation)
    sidebar_network(tr, cat)
    if choice is None or pricing not in PRICE_KIND_OF:
        return choice
    return with_price_kind(tr, cat, choice, pricing)


def sidebar_network(tr: Labels, cat: Catalog) -> None:
    """The scale-out network the nodes are on (``--network``); "" keeps each GPU's default."""

    def label(network_id: str) -> str:
        if not network_id:
            return tr("network_default")
        net = cat.network(network_id)
        if net.allreduce_busbw_curve is not None:  # its collectives priced at the measured curve (comm.py)
            return tr(
                "network_option_curve", id=network_id, gbit=net.gbit_per_s_per_gpu, nodes=net.allreduce_busbw_nodes
            )
        return tr("network_option", id=network_id, gbit=net.gbit_per_s_per_gpu)

    st.selectbox(tr("network"), ["", *cat.networks], key="network", format_func=label, help=tr("network_help"))


def ownership_inputs(tr: Labels) -> tuple[TcoAssumptions | None, float]:
    with st.expander(tr("ownership"), expanded=True):
        st.caption(tr("ownership_help"))
        utilisation = st.slider(tr("tco_utilisation"), 0.05, 1.0, step=0.05, key="tco_utilisation")
        values = dict(
            lifetime_years=number_box(
                st,
                tr,
                "tco_lifetime_years",
                min_value=0.5,
                max_value=MAX_LIFETIME_YEARS,
                step=0.5,
                key="tco_lifetime_years",
            ),
            residual_fraction=st.slider(tr("tco_residual"), 0.0, 0.9, step=0.05, key="tco_residual"),
            electricity_usd_per_kwh=number_box(
                st,
                tr,
                "tco_electricity",
                min_value=0.0,
                max_value=MAX_ELECTRICITY_USD_PER_KWH,
                step=0.01,
                key="tco_electricity",
            ),
            hosting_usd_per_gpu_month=number_box(
                st,
                tr,
                "tco_hosting",
                min_value=0.0,
                max_value=MAX_HOSTING_USD_PER_GPU_MONTH,
                step=10.0,
                key="tco_hosting",
            ),
            pue=number_box(st, tr, "tco_pue", min_value=1.0, max_value=MAX_PUE, step=0.05, key="tco_pue"),
            cost_of_capital_rate=st.slider(
                tr("tco_capital"), 0.0, 0.3, step=0.01, key="tco_capital", help=tr("tco_capital_help")
            ),
        )
    return TcoAssumptions(**values), utilisation


def sidebar_training(tr: Labels, model: ModelSpec | None) -> dict:
    seq_len = st.selectbox(tr("seq_len"), SEQ_LENS, key="seq_len")
    if model is not None and (past := context_extension(model, seq_len)) is not None:
        # A learned position table does not extend as RoPE does (planner/model/structure.py); said
        # here, under the input, for the card and the explorer alike (the CLI's plan/estimate warning).
        key = "seq_too_long_learned" if past.learned else "seq_too_long"
        st.warning(tr(key, seq_len=seq_len, model=model.name, limit=model.max_seq_len))
    batch = st.selectbox(
        tr("global_batch"),
        GLOBAL_BATCHES,
        key="global_batch",
        format_func=lambda v: tr("auto") if v == 0 else app_core.token_count(v),
    )
    precision = st.selectbox(tr("precision"), [p.value for p in Precision], key="precision")
    # only the modes the stack has a switch for (review s41: torchtitan refused "blocks" after it was offered)
    stack = Stack(st.session_state.get("stack", Stack.TRAINPLAN.value))
    offered, set_aside = ac_modes_for_stack(stack)
    ac = st.multiselect(tr("ac"), offered, key="ac", format_func=tr.option)
    if set_aside:  # said, and put back when a stack offers them again (app53 M3)
        st.caption(tr("ac_set_aside", stack=stack.value, modes=tr.join(tr.option(m) for m in set_aside)))
    offload = st.checkbox(tr("allow_offload"), key="allow_offload")
    max_gpus = number_box(st, tr, "max_gpus", min_value=1, max_value=MAX_GPUS, step=64, key="max_gpus")
    top_k = st.slider(tr("top_k"), 1, 50, key="top_k")
    return dict(
        seq_len=seq_len,
        global_batch_tokens=batch or None,
        precision=precision,
        activation_checkpointing=tuple(ac),
        allow_offload=offload,
        max_gpus=int(max_gpus),
        top_k=top_k,
    )


def uploader_css(tr: Labels) -> str:
    """Streamlit writes its uploaders' button and size limit in English only ("Upload", "1MB per
    file • TOML"); on another language's page the CSS hides them and writes the page's words
    instead (issue 30)."""
    if tr.lang == "en":
        return ""
    zone = "[data-testid='stFileUploaderDropzone']"
    hidden = "font-size: 0 !important;"
    return (
        f"<style>{zone} button p, [data-testid='stFileUploaderDropzoneInstructions'] span {{ {hidden} }}"
        f"{zone} button p::after {{ content: '{tr('uploader_button')}'; font-size: 0.875rem; }}"
        "[data-testid='stFileUploaderDropzoneInstructions'] span::after "
        f"{{ content: '{tr('uploader_limit', mb=app_core.UPLOAD_LIMIT_MB)}'; font-size: 0.875rem; }}</style>"
    )


def sidebar(cat: Catalog) -> tuple[Labels, Inputs | None]:
    with st.sidebar:
        lang = st.radio(
            "Language / 语言",
            tuple(LANGUAGE_NAMES),
            key="lang",
            format_func=LANGUAGE_NAMES.get,
            horizontal=True,
            on_change=keep_choices,
        )
        tr = Labels(lang)
        css = uploader_css(tr)
        if css:
            st.html(css)
        portfolio = st.toggle(tr("portfolio_mode"), key="portfolio_mode", help=tr("portfolio_help"))
        st.header(tr("section_model"))
        model = sidebar_model(tr)
        tokens = sidebar_tokens(tr, model)
        st.header(tr("section_goals"))
        goals = sidebar_goals(tr)
        st.header(tr("section_gpus"))
        gpu_choice = sidebar_gpus(tr, cat)
        st.header(tr("section_training"))
        training = sidebar_training(tr, model)
        headroom = (
            st.slider(tr("headroom"), 0, app_core.MAX_HEADROOM_PCT, key="headroom_pct", help=tr("headroom_help")) / 100
        )
        run_losses = sidebar_run_losses(tr)
        st.header(tr("section_stack"))
        stack, switch, calibration = sidebar_stack(tr, model)
    if model is None or gpu_choice is None:
        return tr, None
    if not training["activation_checkpointing"]:
        st.error(tr("no_ac"))
        return tr, None
    note = None
    if switch is not None:  # issue 27: an ALiBi model under megatron-lm
        note = tr("stack_switched_alibi", stack=stack.value, model=plain(model.name), runs=switch.runs.value)
        stack = switch.runs
    try:
        request = PlanRequest(
            model=model,
            training_tokens=tokens,
            gpus=gpu_choice.gpus,
            price_overrides=gpu_choice.prices,
            price_kind=gpu_choice.price_kind,
            term_filled=gpu_choice.term_filled,
            stack=stack,
            attention=st.session_state["attention"] or None,
            compile=stack.compiles and st.session_state["compile"],
            partition_activations=stack.partitions_activations and st.session_state["partition_activations"],
            moe_a2a_overlap=stack.overlaps_moe_a2a and st.session_state["moe_a2a_overlap"],
            tp_comm_overlap=not stack.overlaps_tp_comm or st.session_state["tp_comm_overlap"],
            optimizer_precision=optimizer_choice(stack),
            network=st.session_state["network"] or None,
            run_losses=run_losses,
            **goals,
            **training,
        )
    except ValueError as exc:  # a stack's refusal in the page's words (trial s34: the 中文 page printed English)
        st.error(tr("bad_request", error=reason_text(tr, refusal(exc), LAYOUT_REASONS)))
        return tr, None
    bought = st.session_state["pricing"] == "bought"
    return tr, Inputs(
        request=request,
        headroom=headroom,
        portfolio_mode=portfolio,
        bought=bought,
        calibration=calibration,
        purchases=gpu_choice.purchases,
        tco=gpu_choice.tco,
        rents=gpu_choice.rents,
        left_out=gpu_choice.left_out,
        stack_note=note,
    )

"""The layout explorer: fix every knob of one configuration and read the API's exact estimate.

GPU type and count, tp/pp/cp/dp_replicate (dp_shard is what is left of the count), sharding,
micro-batch, accumulation, activation checkpointing and precision; the answer is
``planner.api.build_plan`` (the same ``estimate`` the planner scores), shown as memory per term
against the capacity and the step-time breakdown. "Send to plan" makes the sidebar plan for that
GPU type and count; "Download plan.json" saves this configuration as a runnable plan.
"""

from __future__ import annotations

import streamlit as st

from planner.layout import ActivationCheckpointing, Layout, Precision, Sharding, TrainingConfig
from planner.limits import MAX_BATCH_TOKENS, MAX_GPUS
from planner.model.stacks import Stack
from planner.plan import Plan
from ui import figures
from ui.cached import ExplorerPricing, cached_layout_plan, catalog, cuda_context_gib
from ui.card_notices import estimate_texts
from ui.gpu_table import send_rows
from ui.i18n import Labels, plain
from ui.messages import cost_parts, duration, figure_bands, per_second, seconds
from ui.number_box import number_box
from ui.reasons import LAYOUT_REASONS, Refusal, fix_text, reason_text, refusal
from ui.sidebar import Inputs

METRICS_PER_ROW = 3  # six in one row cut "660,171" and "$14,882" at 800 px (issue 30)
DEGREES = ("ex_tp", "ex_pp", "ex_vpp", "ex_cp", "ex_ep", "ex_dp_replicate")


# Every explorer widget's key. Streamlit drops a widget's value on a run that does not draw it (the
# explorer's tab closed: trial s25, leaving the tab reset every knob to its default). Each widget
# copies its value into KEPT when the reader changes it (``remember``, before the run), and every
# run puts KEPT back before the widgets are drawn: never older than what the reader last set.
KEPT = "_ex_kept"
LOADED_FROM = "_ex_from"  # the chosen plan the widgets were last set from (its JSON)
SENT = "_ex_sent"  # "Send to plan" was pressed: the plan it makes does not reload the explorer
LOADED_VALUES = "_ex_loaded"  # the widget values the last load set, to tell the reader's own from them
REPLACED = "_ex_replaced"  # the reader's layout a new chosen plan replaced, for one run's notice


def remember(key: str) -> None:
    """A widget's on_change: its new value is the one to put back."""
    st.session_state.setdefault(KEPT, {})[key] = st.session_state[key]


def load_plan(p: Plan) -> None:
    """Set the explorer's widgets to a plan's configuration."""
    layout, training = p.layout, p.training
    values = dict(ex_gpu=p.gpu, ex_num_gpus=p.num_gpus, ex_tp=layout.tp, ex_pp=layout.pp, ex_cp=layout.cp)
    values |= dict(ex_vpp=layout.vpp, ex_ep=layout.ep, ex_dp_replicate=layout.dp_replicate)
    values |= dict(ex_sharding=layout.sharding.value, ex_micro_batch=training.micro_batch)
    values |= dict(ex_grad_accum=training.grad_accum, ex_ac=training.activation_checkpointing.value)
    values |= dict(ex_precision=training.precision.value, ex_ac_blocks=max(1, training.ac_blocks))  # min 1
    values |= dict(ex_offload=training.offload)
    st.session_state.update(values)
    st.session_state[KEPT] = values
    st.session_state[LOADED_VALUES] = dict(values)
    st.session_state[LOADED_FROM] = p.to_json()


def restore_or_load(chosen: Plan | None) -> None:
    """Start from the chosen plan whenever it changes (a new model or request), except the plan
    "Send to plan" asked for; otherwise put back what the reader set last (KEPT)."""
    state = st.session_state
    sent = state.pop(SENT, False)  # one run only: a plan asked for later (a new model) loads as before
    if chosen is not None and state.get(LOADED_FROM) != chosen.to_json() and not sent:
        # trial s40: ticking a sidebar box reloaded the explorer over the layout the reader had set,
        # unsaid, and it read "Fits" for another layout: the notice names what was replaced.
        kept = state.get(KEPT)
        if LOADED_FROM in state and kept and kept != state.get(LOADED_VALUES):
            state[REPLACED] = layout_words(kept)
        load_plan(chosen)
        return
    if chosen is not None:  # the plan "Send to plan" made: the reader's layout stays (sessions 25-29)
        state[LOADED_FROM] = chosen.to_json()
    state.update(state.get(KEPT, {}))


def layout_words(values: dict) -> str:
    """'128 × h100-sxm, zero1, tp 8, pp 8, vpp 12, cp 1, ep 1, micro-batch 1 × 16' from the widgets' values."""
    get = values.get
    degrees = ", ".join(f"{name} {get(f'ex_{name}')}" for name in ("tp", "pp", "vpp", "cp", "ep"))
    return (
        f"{get('ex_num_gpus')} × {get('ex_gpu')}, {get('ex_sharding')}, {degrees},"
        f" micro-batch {get('ex_micro_batch')} × {get('ex_grad_accum')}"
    )


def send_to_plan() -> None:
    """Make the sidebar plan for the explored GPU type and count only (the GPU table's rows)."""
    send_rows(st.session_state["ex_gpu"], int(st.session_state["ex_num_gpus"]))
    st.session_state[SENT] = True


def offered_choice(key: str, offered: list[str], fallback: str) -> None:
    """A select box's kept value where the stack still offers it, else ``fallback`` (review s41:
    torchtitan refused the "zero1" and "blocks" the explorer offered it)."""
    if key in st.session_state and st.session_state[key] not in offered:
        st.session_state[key] = fallback


def explorer_inputs(tr: Labels, stack: Stack) -> tuple[str, int, dict, dict]:
    gpus = list(catalog().gpus)
    left, right = st.columns(2)
    gpu = left.selectbox(tr("ex_gpu"), gpus, **kept("ex_gpu"))
    num_gpus = int(number_box(right, tr, "ex_num_gpus", min_value=1, max_value=MAX_GPUS, step=1, **kept("ex_num_gpus")))
    columns = st.columns(len(DEGREES))
    notes = st.container()  # under the row: a sixth of the width wraps a warning a word a line
    tp, pp, vpp, cp, ep, dp_replicate = (
        int(number_box(column, tr, key, min_value=1, max_value=MAX_GPUS, step=1, warn_in=notes, **kept(key)))
        for column, key in zip(columns, DEGREES, strict=True)
    )
    # three a row: five cut the choices to "zer" and "bf1" at 800 px (issue 30)
    row = [*st.columns(3), *st.columns(3)]
    shardings = [s.value for s in Sharding if stack.offers_sharding(s)]
    offered_choice("ex_sharding", shardings, stack.default_sharding().value)
    sharding = row[0].selectbox(tr("ex_sharding"), shardings, **kept("ex_sharding"))
    modes = [a.value for a in ActivationCheckpointing if stack.offers_ac(a)]
    offered_choice("ex_ac", modes, ActivationCheckpointing.FULL.value)
    ac = row[1].selectbox(tr("ex_ac"), modes, format_func=tr.option, **kept("ex_ac"))
    precision = row[2].selectbox(tr("ex_precision"), [p.value for p in Precision], **kept("ex_precision"))
    micro = int(number_box(row[3], tr, "ex_micro_batch", min_value=1, step=1, **kept("ex_micro_batch")))
    accum = int(number_box(row[4], tr, "ex_grad_accum", min_value=1, step=1, **kept("ex_grad_accum")))
    # The checkpointed block count of "blocks" (trial s25: without it "blocks" ran as none).
    blocks = ac == ActivationCheckpointing.BLOCKS.value
    ac_blocks = int(
        number_box(row[5], tr, "ex_ac_blocks", min_value=1, step=1, disabled=not blocks, **kept("ex_ac_blocks"))
    )
    offload = st.checkbox(tr("ex_offload"), **kept("ex_offload"))  # the plan's, when it offloads
    layout = dict(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, dp_replicate=dp_replicate, sharding=sharding)
    training = dict(micro_batch=micro, grad_accum=accum, activation_checkpointing=ac, precision=precision)
    return gpu, num_gpus, layout, training | dict(ac_blocks=ac_blocks if blocks else 0, offload=offload)


def kept(key: str) -> dict:
    """A widget's key and the callback that keeps its value (``remember``)."""
    return dict(key=key, on_change=remember, args=(key,))


def explored_plan(tr: Labels, inputs: Inputs, gpu: str, num_gpus: int, layout: dict, training: dict) -> Plan | None:
    request = inputs.request
    try:
        shape = Layout(**layout)
        config = TrainingConfig(seq_len=request.seq_len, impl=request.impl, compile=request.compile, **training)
    except ValueError as exc:
        st.error(tr("ex_invalid", error=plain(reason_text(tr, refusal(exc, where=False), LAYOUT_REASONS))))
        return None
    answer = cached_layout_plan(
        request.model.model_dump_json(),
        gpu,
        shape.model_dump_json(),
        config.model_dump_json(),
        num_gpus,
        request.training_tokens,
        inputs.headroom,
        request.stack,
        inputs.calibration,
        request.network,
        ExplorerPricing(
            request.price_overrides.get(gpu),
            request.price_kind,
            request.attention,
            request.partition_activations,
            request.moe_a2a_overlap,
            request.tp_comm_overlap,
            request.optimizer_precision,
            request.run_losses,
        ),
    )
    if isinstance(answer, Refusal):
        st.error(tr("ex_invalid", error=plain(reason_text(tr, answer, LAYOUT_REASONS))))
        return None
    if answer.estimate.global_batch_tokens > MAX_BATCH_TOKENS:  # the CLI's bound (planner/limits.py)
        st.error(tr("ex_batch_too_large", tokens=answer.estimate.global_batch_tokens, limit=MAX_BATCH_TOKENS))
        return None
    return answer


def memory_delta(tr: Labels, band: str | None, usable_gib: float) -> str:
    """Under the reserved memory: its 80 % band, as the card's (app53 M2), then the usable memory."""
    usable = tr("ex_usable", usable=usable_gib)
    return usable if band is None else tr("card_memory_band", band=band, share=usable)


def explorer_summary(tr: Labels, p: Plan, context_gib: float) -> None:
    e = p.estimate
    m = e.memory
    usable = m.usable_gib
    bands = figure_bands(tr, e)  # each figure's 80 % band, as the card shows it (trial s33: none here)
    values = (  # the usable memory under the reserved, as the card writes the capacity
        ("ex_memory", f"{m.reserved_gib:,.1f} GiB", memory_delta(tr, bands["reserved_gib"], usable)),
        ("ex_step", seconds(tr, e.time.step_s), bands["step_s"]),
        ("tokens_per_s", per_second(e.throughput.tokens_per_s), bands["tokens_per_s"]),
        ("card_mfu", f"{e.throughput.mfu:.1%}", bands["mfu"]),  # trial s35 (round 2): the card's had one
        # an infeasible layout's time and cost are what it would give if it fit (review s39: as the CLI's)
        (
            "card_time" if e.feasible else "ex_time_if_fit",
            duration(tr, e.time_to_train_h or 0.0),
            bands["time_to_train_h"],
        ),
        ("card_cost" if e.feasible else "ex_cost_if_fit", cost_parts(e)[0], bands["cost_usd"]),
    )
    for row in (values[:METRICS_PER_ROW], values[METRICS_PER_ROW:]):
        for column, (key, value, delta) in zip(st.columns(METRICS_PER_ROW), row, strict=True):
            column.metric(tr(key), value, delta, delta_color="off", delta_arrow="off")
    st.caption(f"{p.layout_words} · {tr('ex_batch', tokens=e.global_batch_tokens)}")
    if e.feasible:
        st.success(tr("ex_fits"))
    elif tr.lang == "en":  # the planner's reason and its fix hints ("use tp=4 (now 1)")
        st.warning(tr("ex_does_not_fit", reason=plain(e.reason or ""), fix=plain(e.fix or "")))
    elif e.fix_hints:  # an estimate is infeasible for memory alone: what must fit is reserved + the CUDA context
        fix = plain(fix_text(tr, e.fix_hints))
        st.warning(tr("ex_over_memory_try", need=m.reserved_gib + context_gib, usable=usable, fix=fix))
    else:  # a plan without typed hints (one read from a file): the general advice
        st.warning(tr("ex_over_memory", need=m.reserved_gib + context_gib, usable=usable))


def show_explorer(tr: Labels, inputs: Inputs, chosen: Plan | None) -> None:
    """The explorer's widgets (starting from the chosen plan), the estimate, its breakdowns and actions."""
    restore_or_load(chosen)
    if (replaced := st.session_state.pop(REPLACED, None)) is not None:
        st.info(tr("ex_replaced", layout=replaced))
    st.caption(tr("ex_help"))
    if chosen is not None:
        st.button(tr("ex_load"), key="ex_load", on_click=load_plan, args=(chosen,))
    gpu, num_gpus, layout, training = explorer_inputs(tr, inputs.request.stack)
    p = explored_plan(tr, inputs, gpu, num_gpus, layout, training)
    if p is None:
        return
    context_gib = cuda_context_gib(inputs.headroom, inputs.request.stack)
    explorer_summary(tr, p, context_gib)
    # trial s44 app M4: another GPU count kept the accumulation, so the batch (and time, cost) moved, unsaid
    if chosen is not None and (batch := p.estimate.global_batch_tokens) != chosen.estimate.global_batch_tokens:
        st.info(tr("ex_batch_differs", tokens=batch, plan_tokens=chosen.estimate.global_batch_tokens))
    # the CLI's estimate warnings (review s43: the reserved term; parity trial s50: the rest)
    for text in estimate_texts(tr, inputs.request, p):
        st.warning(text)
    # One above the other, each the page's width: side by side, an 800 px window left each chart
    # ~200 px, all of it legend, and cut the plan's label (issue 30).
    st.plotly_chart(figures.memory_figure([p], context_gib, tr, inputs.request.risk), key="chart_ex_memory")
    st.plotly_chart(figures.step_time_figure([p], tr), key="chart_ex_step")
    left, right = st.columns(2)
    left.button(tr("ex_send"), key="ex_send", on_click=send_to_plan, help=tr("ex_send_help"))
    right.download_button(
        tr("download_plan"), p.to_json() + "\n", file_name="plan.json", mime="application/json", key="ex_download"
    )

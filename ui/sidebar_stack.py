"""The sidebar's last section: the software stack to predict for (``--stack``), the attention
kernel and switches that stack offers, and the calibration file (``--calibration``), uploaded or
the per-user default the CLI applies. A module of its own so that ``ui/sidebar.py`` stays under
the project's ~500 lines a module (CONTRIBUTING.md); ``ui.sidebar.sidebar`` draws it last.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from planner.catalog.calibration import read_calibration_bytes
from planner.errors import CatalogError
from planner.layout import ActivationCheckpointing
from planner.model.attention_kernels import AttentionKernel
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.request import DEFAULT_AC
from planner.stack_rules import StackSwitch, stack_switch
from ui import app_core
from ui.cached import cached_calibration
from ui.calibration import choose_calibration
from ui.calibration_upload import CalibrationUpload
from ui.i18n import Labels
from ui.reasons import CALIBRATION_REASONS, reason_text, refusal


def sidebar_stack(tr: Labels, model: ModelSpec | None) -> tuple[Stack, StackSwitch | None, CalibrationUpload | None]:
    """The stack to predict for (``--stack``), its switch to a fork where it has one (``stack_switch``;
    the request reads it, not a second ask), and a calibration file (``--calibration``), if usable.
    Its kernels and switches are those of the stack that runs the plan: an ALiBi model under
    megatron-lm runs Megatron-DeepSpeed (``stack_switch``), whose partitioned activations the CLI
    takes there too (app48: the box was hidden, and a tick left from that stack still applied)."""
    chosen = Stack(st.selectbox(tr("stack"), [s.value for s in Stack], key="stack", help=tr("stack_help")))
    switch = None if model is None else stack_switch(chosen, model, pp=1)
    stack = chosen if switch is None else switch.runs
    # only the kernels the stack's code can call (trial s34: megatron-lm offered cuDNN, then refused it)
    kernels = ["", *(k.value for k in AttentionKernel if stack.calls(k))]
    if st.session_state.get("attention", "") not in kernels:
        st.session_state["attention"] = ""
    st.selectbox(
        tr("attention"),
        kernels,
        key="attention",
        format_func=lambda k: k or tr("attention_stack"),
        help=tr("attention_help"),
    )
    if stack.compiles:  # PyTorch's stacks (the Megatron family runs its own fused kernels)
        st.checkbox(tr("compile"), key="compile", help=tr("compile_help"))
    if stack.partitions_activations:  # DeepSpeed's checkpointing under Megatron's tp only
        st.checkbox(tr("partition_activations"), key="partition_activations", help=tr("partition_activations_help"))
    if stack.overlaps_moe_a2a:  # its combined 1F1B schedule only (deepseek-v3's profile has DualPipe)
        st.checkbox(tr("moe_a2a_overlap"), key="moe_a2a_overlap", help=tr("moe_a2a_overlap_help"))
    if stack.overlaps_tp_comm:  # Megatron-Core's userbuffers (the other profiles have no TP overlap to drop)
        st.checkbox(tr("tp_comm_overlap"), key="tp_comm_overlap", help=tr("tp_comm_overlap_help"))
    optimizer_checkboxes(tr, stack)
    uploaded = st.file_uploader(
        tr("calibration_upload"),
        type=["toml"],
        key="calibration_upload",
        max_upload_size=app_core.UPLOAD_LIMIT_MB,
        help=tr("calibration_help"),
    )
    default = None
    if uploaded is None:
        default = choose_calibration(None, disabled=False)  # the file plan/estimate/explain apply too
        if default is None:
            return chosen, switch, None
        st.caption(tr("calibration_default", path=default.path))
    upload = CalibrationUpload(str(default.path) if default else uploaded.name if uploaded else "", b"")
    try:
        # The default file is read as --calibration reads it (a regular file, capped).
        data = read_calibration_bytes(default.path) if default else uploaded.getvalue() if uploaded else b""
        upload = CalibrationUpload(upload.name, data)
        cached_calibration(upload)
    except app_core.UploadTooLarge as exc:
        size_mb = exc.size_bytes / 1e6
        st.error(tr("calibration_too_big", name=exc.name, size_mb=size_mb, limit_mb=app_core.UPLOAD_LIMIT_MB))
        return chosen, switch, None
    except CatalogError as exc:  # planned with the plain catalog
        error = reason_text(tr, refusal(exc), CALIBRATION_REASONS, name=upload.shown)
        st.error(tr("bad_calibration", error=error))
        return chosen, switch, None
    return chosen, switch, upload


# The optimizer formats (``OptimizerPrecision``'s fields) a stack may offer, by widget key, and whether it does.
OPTIMIZER_FORMATS: dict[str, Callable[[Stack], bool]] = {
    "grad_reduce_bf16": lambda s: s.reduces_grads_in_bf16,  # Megatron's gradient buffers; FSDP2 keeps fp32 shards
    "param_remainders": lambda s: s.stores_param_remainders,  # Megatron-Core's precision-aware optimizer
    "pure_bf16": lambda s: s.trains_pure_bf16,  # trainplan, torchtitan, hf-trainer: no fp32 master
}


def optimizer_checkboxes(tr: Labels, stack: Stack) -> None:
    """A box for each optimizer format ``stack`` offers (``OPTIMIZER_FORMATS``)."""
    for key, offered in OPTIMIZER_FORMATS.items():
        if offered(stack):
            st.checkbox(tr(key), key=key, help=tr(f"{key}_help"))


def optimizer_choice(stack: Stack) -> OptimizerPrecision:
    """The formats ticked that ``stack`` offers (a box a former stack left ticked counts for none)."""
    return OptimizerPrecision(**{key: bool(st.session_state[key]) for key in OPTIMIZER_FORMATS}).kept_under(stack)


# The checkpointing modes a stack without their switch took out of "Activation checkpointing
# allowed", kept to put back when a stack offers them again (app53 M3: a round trip through
# deepspeed and hf-trainer left {none, full}, and every later search a smaller space, unsaid).
AC_SET_ASIDE = "ac_set_aside"


def ac_modes_for_stack(stack: Stack) -> tuple[list[str], list[str]]:
    """(the modes ``stack`` has a switch for, the chosen ones it lacks), the box's choice set to
    the chosen modes it has, with those set aside before and offered again put back; the planner's
    default modes it has where none is left (review s41: torchtitan refused "blocks" once offered)."""
    state = st.session_state
    offered = [a.value for a in ActivationCheckpointing if stack.offers_ac(a)]
    chosen = list(state.get("ac", []))
    aside = [m for m in state.get(AC_SET_ASIDE, []) if m not in chosen]
    if any(m not in offered for m in chosen) or any(m in offered for m in aside):
        kept = [m for m in offered if m in chosen or m in aside]
        state["ac"] = kept or [a.value for a in DEFAULT_AC if a.value in offered]
    state[AC_SET_ASIDE] = [m for m in [*aside, *chosen] if m not in offered]
    return offered, state[AC_SET_ASIDE]

"""The planner's refusals in the page's language, from their codes and figures.

A custom model's dimensions (``ModelSpec``'s checks), a fixed layout of the explorer (``Layout``,
``Layout.resolve``, the structural rules of planner/model/structure.py) and an uploaded calibration
file are refused with a ``planner.errors.RuleViolation``: a ``RuleCode`` and the figures its
sentence cites. The English page shows the planner's own sentence; the others render the code's
label of ``ui.i18n_messages`` (``reason_*``) from the same figures. An error without a code (or
with a code its table does not list) gets the table's generic label, never English.
tests/ui/test_app_details.py breaks each rule and checks its code, and that every code has a label.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from planner.errors import RuleCode, rule_violation
from planner.fmt import one_line
from ui.i18n import Labels

_C = RuleCode


@dataclass(frozen=True)
class Refusal:
    """A refusal as the app keeps it: the planner's one line and, for a broken rule, its code and
    figures. Plain data, so ``st.cache_data`` can return it (ui/cached.py)."""

    message: str
    code: RuleCode | None = None
    figures: dict[str, int | float | str] = field(default_factory=dict)


def refusal(exc: BaseException, *, where: bool = True) -> Refusal:
    """``exc`` as a Refusal (``where``: a pydantic error's line names its field, ``one_line``)."""
    violation = rule_violation(exc)
    message = one_line(exc, where=where)
    return Refusal(message) if violation is None else Refusal(message, violation.code, dict(violation.figures))


class Reasons(NamedTuple):
    """The labels of the codes one part of the app meets, and the label for any other refusal."""

    labels: Mapping[RuleCode, str]
    fallback: str = "reason_other"


# ModelSpec's checks (the custom-model fields on screen can break the first four and head_dim_odd).
MODEL_REASONS = Reasons({
    _C.HEADS_KV: "reason_heads_kv",
    _C.HIDDEN_HEADS: "reason_hidden_heads",
    _C.EXPERTS_PER_TOKEN: "reason_experts_per_token",
    _C.LAYER_COUNTS: "reason_layer_counts",
    _C.SLIDING_WITHOUT_WINDOW: "reason_sliding_window",
    _C.CHUNKED_WITHOUT_CHUNK: "reason_attention_chunk",
    _C.DENSE_LAYERS_NOT_MOE: "reason_dense_not_moe",
    _C.HEAD_DIM_ODD: "reason_head_dim_odd",
    _C.ROTARY_DIM_ODD: "reason_rotary_odd",
})  # fmt: skip
# What a fixed layout of the explorer can break: Layout, resolve, the structural rules, the precision.
LAYOUT_REASONS = Reasons({
    _C.DP_SHARD_ZERO: "reason_dp_shard_zero",
    _C.VPP_PP: "reason_vpp_pp",
    _C.DDP_SHARD: "reason_ddp_shard",
    _C.AC_BLOCKS_MODE: "reason_ac_blocks_mode",
    _C.EP_DDP: "reason_ep_ddp",
    _C.EP_FITS: "reason_ep_fits",
    _C.EP_FITS_TOKEN_SPLIT: "reason_ep_fits_tp",
    _C.WORLD_SIZE_MIN: "reason_world_size_min",
    _C.WORLD_SIZE: "reason_world_size",
    _C.DEGREES_PRODUCT: "reason_degrees_product",
    _C.PP_STAGES_RANGE: "reason_pp_layers",
    _C.NATIVE_UNSUPPORTED: "reason_native_unsupported",
    _C.TP_HEADS: "reason_tp_heads",
    _C.TP_KV_HEADS: "reason_tp_kv_heads",
    _C.HF_TP: "reason_hf_tp",
    _C.TP_FFN: "reason_tp_ffn",
    _C.QK_NORM_TP: "reason_qk_norm_tp",
    _C.TP_VOCAB: "reason_tp_vocab",
    _C.SEQ_TP_CP: "reason_seq_tp_cp",
    _C.TP_DOMAIN: "reason_tp_domain",
    _C.PP_LAYERS: "reason_pp_layers",
    _C.PP_NATIVE: "reason_pp_native",
    _C.ONE_F_ONE_B_ACCUM: "reason_1f1b_accum",
    _C.VPP_ACCUM: "reason_vpp_accum",
    _C.CP_NATIVE: "reason_cp_native",
    _C.CP_SLIDING: "reason_cp_sliding",
    _C.SEQ_CP: "reason_seq_cp",
    _C.FP8_TP_HF: "reason_fp8_tp_hf",
    _C.EP_DENSE: "reason_ep_dense",
    _C.EP_EXPERTS: "reason_ep_experts",
    _C.EP_NATIVE: "reason_ep_native",
    _C.MOE_TP: "reason_moe_tp",
    _C.MOE_SHARD: "reason_moe_shard",
    _C.MOE_SHARD_EP: "reason_moe_shard",
    _C.PRECISION: "reason_precision",
})  # fmt: skip
# A calibration file the app cannot use (planner/catalog/calibration.py and the catalog's rate checks).
CALIBRATION_REASONS = Reasons({
    _C.CAL_TOML: "reason_cal_toml",
    _C.CAL_UNKNOWN_TABLE: "reason_cal_unknown_table",
    _C.CAL_MISSING_TABLE: "reason_cal_missing_table",
    _C.CAL_MACHINE_FIELD: "reason_cal_machine",
    _C.CAL_UNKNOWN_GPU: "reason_cal_gpu",
    _C.CAL_NOT_A_RATE: "reason_cal_field",
    _C.CAL_OVER_CEILING: "reason_cal_over",
}, fallback="reason_cal_other")  # fmt: skip


def reason_key(refused: Refusal, reasons: Reasons) -> str:
    """The label key of the refusal's code, or the table's fallback."""
    return reasons.fallback if refused.code is None else reasons.labels.get(refused.code, reasons.fallback)


def reason_text(tr: Labels, refused: Refusal, reasons: Reasons, **names: str) -> str:
    """The refusal in the page's language (English: the planner's own words); ``names`` fill the
    labels' other placeholders (the upload's name, the on-screen names of a custom model's fields)."""
    if tr.lang == "en":
        return refused.message
    # A label cites only its code's template figures and ``names`` (tests/ui/test_app_details.py).
    return tr(reason_key(refused, reasons), **{**refused.figures, **names})

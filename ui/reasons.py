"""The planner's refusals in the page's language, from their codes and figures.

A custom model's dimensions (``ModelSpec``'s checks), a fixed layout of the explorer (``Layout``,
``Layout.resolve``, the structural rules of planner/model/structure.py), an uploaded calibration
file and a Hugging Face config.json are refused with a ``planner.errors.RuleViolation``: a
``RuleCode`` and the figures its sentence cites. The English page shows the planner's own
sentence; the others render the code's label of ``ui.i18n_messages`` (``reason_*``) from the same
figures. An error without a code (or with a code its table does not list) gets the table's
generic label, never English.
tests/ui/test_app_details.py breaks each rule and checks its code, and that every code has a label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from planner.errors import RuleCode, rule_violation
from planner.fix_codes import FIX_DP_SHARD, FIX_REPLICAS, FixCode, with_replicas
from planner.fmt import one_line
from planner.plan import FixHint
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
    """The labels of the codes one part of the app meets, and the label for any other refusal;
    ``english``: whether the English page words a coded refusal from its label too where the
    planner's own sentence names CLI flags ("use --vpp 1"; trial s26b); elsewhere the sentence, with
    its figures and fix, stands."""

    labels: Mapping[RuleCode, str]
    fallback: str = "reason_other"
    english: bool = False


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
    _C.EXPERT_GROUPS: "reason_expert_groups",
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
    _C.EXPERT_TP_DENSE: "reason_expert_tp_dense",
    _C.EP_EXPERTS: "reason_ep_experts",
    _C.EP_NATIVE: "reason_ep_native",
    _C.EP_FAMILY: "reason_ep_family",
    _C.MOE_TP: "reason_moe_tp",
    _C.MOE_SHARD: "reason_moe_shard",
    _C.MOE_SHARD_EP: "reason_moe_shard",
    _C.PRECISION: "reason_precision",
    _C.STACK_NO_CP: "reason_stack_no_cp",
    _C.STACK_NO_EP: "reason_stack_no_ep",
    _C.STACK_NO_MOE: "reason_stack_no_moe",
    _C.STACK_NO_ALIBI: "reason_stack_no_alibi",
    _C.STACK_SHARDING: "reason_stack_sharding",
    _C.STACK_NO_ZERO1: "reason_stack_no_zero1",
    _C.STACK_AC_MODE: "reason_stack_ac_mode",
    _C.STACK_NO_PIPELINE: "reason_stack_no_pipeline",
    _C.STACK_HF_PIPELINE: "reason_stack_hf_pipeline",
    _C.STACK_AUTOTP_ZERO3: "reason_stack_autotp_zero3",
    _C.STACK_PIPELINE_ZERO: "reason_stack_pipeline_zero",
    _C.STACK_INTERLEAVED: "reason_stack_interleaved",
    _C.STACK_EVEN_STAGES: "reason_stack_even_stages",
    _C.STACK_INTERLEAVING: "reason_stack_interleaving",
    _C.STACK_OFFLOAD_ZERO: "reason_stack_offload_zero",
    _C.STACK_IMPL: "reason_stack_impl",
    _C.STACK_COMPILE: "reason_stack_compile",
    _C.STACK_KERNEL: "reason_stack_kernel",
    _C.STACK_PARTITION: "reason_stack_partition",
    _C.STACK_A2A_OVERLAP: "reason_stack_a2a_overlap",
    _C.STACK_TP_OVERLAP: "reason_stack_tp_overlap",
    _C.STACK_A2A_LAYOUT: "reason_stack_a2a_layout",
    _C.STACK_GRAD_BF16: "reason_stack_grad_bf16",
    _C.STACK_PARAM_REMAINDERS: "reason_stack_param_remainders",
    _C.PARAM_REMAINDERS_LAYOUT: "reason_param_remainders_layout",
    _C.PARAM_REMAINDERS_PRECISION: "reason_param_remainders_precision",
    _C.BF16_GRADS_PRECISION: "reason_bf16_grads_precision",
    _C.STACK_PURE_BF16: "reason_stack_pure_bf16",
    _C.PURE_BF16_PRECISION: "reason_pure_bf16_precision",
    _C.PURE_BF16_OFFLOAD: "reason_pure_bf16_offload",
    _C.AC_BLOCKS_RANK: "reason_ac_blocks_rank",
}, english=True)  # fmt: skip
# A calibration file the app cannot use (planner/catalog/calibration.py and the catalog's rate checks).
CALIBRATION_REASONS = Reasons({
    _C.CAL_TOML: "reason_cal_toml",
    _C.CAL_UNKNOWN_TABLE: "reason_cal_unknown_table",
    _C.CAL_MISSING_TABLE: "reason_cal_missing_table",
    _C.CAL_MACHINE_FIELD: "reason_cal_machine",
    _C.CAL_MACHINE_UNKNOWN: "reason_cal_machine_unknown",
    _C.CAL_MACHINE_DATE: "reason_cal_machine_date",
    _C.CAL_DEVICE: "reason_cal_device",
    _C.CAL_UNKNOWN_GPU: "reason_cal_gpu",
    _C.CAL_NOT_A_RATE: "reason_cal_field",
    _C.CAL_OVER_CEILING: "reason_cal_over",
    # The reader's refusals (planner/limits.py): the default calibration file is the one file the app
    # reads from disk; a config.json upload is checked for size before it is written and read.
    _C.INPUT_UNREADABLE: "reason_cal_input_unreadable",
    _C.INPUT_DIRECTORY: "reason_cal_input_directory",
    _C.INPUT_FIFO: "reason_cal_input_fifo",
    _C.INPUT_CHAR_DEVICE: "reason_cal_input_char_device",
    _C.INPUT_BLOCK_DEVICE: "reason_cal_input_block_device",
    _C.INPUT_SOCKET: "reason_cal_input_socket",
    _C.INPUT_NOT_REGULAR: "reason_cal_input_not_regular",
    _C.INPUT_TOO_LARGE: "reason_cal_input_too_large",
    _C.INPUT_GREW: "reason_cal_input_grew",
    _C.INPUT_NOT_UTF8: "reason_cal_input_not_utf8",
}, fallback="reason_cal_other")  # fmt: skip

# A Hugging Face config.json (planner/catalog/hf_*.py) and a model name (planner/catalog/models.py).
CONFIG_REASONS = Reasons({
    _C.HF_NO_FILE: "reason_hf_no_file",
    _C.HF_JSON: "reason_hf_json",
    _C.HF_NESTED: "reason_hf_nested",
    _C.HF_TOP_LEVEL: "reason_hf_top_level",
    _C.HF_MISSING_KEY: "reason_hf_missing_key",
    _C.HF_MISSING_TEXT_CONFIG: "reason_hf_missing_text_config",
    _C.HF_MODEL_TYPE: "reason_hf_model_type",
    _C.HF_MODEL_TYPE_ARCHITECTURE: "reason_hf_model_type_architecture",
    _C.HF_ENCODER_DECODER: "reason_hf_encoder_decoder",
    _C.HF_STATE_SPACE: "reason_hf_state_space",
    _C.HF_HEADS_HIDDEN: "reason_hf_heads_hidden",
    _C.HF_KV_HEADS: "reason_hf_kv_heads",
    _C.HF_EXPERTS_PER_TOKEN: "reason_hf_experts_per_token",
    _C.HF_DIMENSIONS: "reason_hf_dimensions",
    _C.HF_NOT_INTEGER: "reason_hf_not_integer",
    _C.HF_OUT_OF_RANGE: "reason_hf_out_of_range",
    _C.HF_NOT_BOOL: "reason_hf_not_bool",
    _C.HF_NOT_OBJECT: "reason_hf_not_object",
    _C.HF_NOT_POSITIVE: "reason_hf_not_positive",
    _C.HF_NOT_FRACTION: "reason_hf_not_fraction",
    _C.HF_NOT_CAP: "reason_hf_not_cap",
    _C.HF_LAYER_COUNT: "reason_hf_layer_count",
    _C.HF_LAYER_TYPES: "reason_hf_layer_types",
    _C.HF_LAYER_LIST: "reason_hf_layer_list",
    _C.HF_NO_ROPE_LAYERS: "reason_hf_no_rope_layers",
    _C.HF_MPT_QK_LN: "reason_hf_mpt_qk_ln",
    _C.HF_MPT_FFN_TYPE: "reason_hf_mpt_ffn_type",
    _C.HF_MPT_ATTN_TYPE: "reason_hf_mpt_attn_type",
    _C.HF_MPT_EXPANSION: "reason_hf_mpt_expansion",
    _C.HF_NEMOTRON_ACT: "reason_hf_nemotron_act",
    _C.HF_MISTRAL3_TEXT: "reason_hf_mistral3_text",
    _C.HF_DEEPSEEK_BIAS: "reason_hf_deepseek_bias",
    _C.HF_DEEPSEEK_V2_ROUTER: "reason_hf_deepseek_v2_router",
    _C.HF_SHARED_EXPERT: "reason_hf_shared_expert",
    _C.HF_LLAMA4_NO_EXPERTS: "reason_hf_llama4_no_experts",
    _C.UNKNOWN_PRESET: "reason_unknown_preset",
    _C.UNKNOWN_MODEL: "reason_unknown_model",
}, fallback="reason_config_other")  # fmt: skip
# ModelSpec's rules inside a config.json's refusal: a config may set head_dim itself.
CONFIG_MODEL_REASONS = Reasons({**MODEL_REASONS.labels, _C.HEAD_DIM_ODD: "reason_hf_head_dim_odd"})
# The keys of a config.json that ModelSpec's rules cite (a custom model's are its labels on screen).
CONFIG_FIELD_NAMES = {
    "custom_hidden": "hidden_size",
    "custom_heads": "num_attention_heads",
    "custom_kv_heads": "num_key_value_heads",
    "custom_experts": "num_local_experts",
    "custom_experts_per_token": "num_experts_per_tok",
}
# Every table, so a test can check that each code has a label.
ALL_REASONS = (MODEL_REASONS, LAYOUT_REASONS, CALIBRATION_REASONS, CONFIG_REASONS)


# The next steps of an estimate that does not fit (``Estimate.fix_hints``), by code.
FIX_LABELS: Mapping[FixCode, str] = {code: f"fix_{code.value}" for code in FixCode}
# The replicas or FSDP group a fix runs with, said after its words where they are not the layout's
# (``with_replicas``), by the English template they word.
FIX_GROUP_LABELS: Mapping[str, str] = {FIX_REPLICAS: "fix_replicas", FIX_DP_SHARD: "fix_dp_shard"}


def fix_text(tr: Labels, hints: Sequence[FixHint]) -> str:
    """The hints in the page's language, alternatives joined. English keeps the planner's own words
    except where they name a CLI flag: then the label, which names the sidebar's control (trial s40:
    "--precision-aware-optimizer" on a page whose box is "Precision-aware optimizer")."""
    return tr("fix_join").join(_fix_words(tr, hint) for hint in hints)


def _fix_words(tr: Labels, hint: FixHint) -> str:
    if tr.lang == "en" and "--" not in hint.text():
        return hint.text()
    words = tr(FIX_LABELS[hint.code], **hint.figures)
    return with_replicas(words, hint.figures, lambda template: tr(FIX_GROUP_LABELS[template], **hint.figures))


def config_reason_text(tr: Labels, refused: Refusal) -> str:
    """A config.json's refusal in the page's language; invalid dimensions name ModelSpec's rule
    (its code in the figures' ``rule``) in that rule's own label."""
    rule = refused.figures.get("rule")
    if tr.lang == "en" or refused.code is not RuleCode.HF_DIMENSIONS or not isinstance(rule, str):
        return reason_text(tr, refused, CONFIG_REASONS)
    inner = Refusal(refused.message, RuleCode(rule), refused.figures)
    reason = reason_text(tr, inner, CONFIG_MODEL_REASONS, **CONFIG_FIELD_NAMES)
    return tr("reason_hf_dimensions_rule", where=refused.figures["where"], reason=reason)


def reason_key(refused: Refusal, reasons: Reasons) -> str:
    """The label key of the refusal's code, or the table's fallback."""
    return reasons.fallback if refused.code is None else reasons.labels.get(refused.code, reasons.fallback)


def reason_text(tr: Labels, refused: Refusal, reasons: Reasons, **names: str) -> str:
    """The refusal in the page's language (English: the planner's own words, or the label where
    ``reasons.english``); ``names`` fill the
    labels' other placeholders (the upload's name, the on-screen names of a custom model's fields)."""
    flags = reasons.english and "--" in refused.message and reason_key(refused, reasons) != reasons.fallback
    if tr.lang == "en" and not flags:  # review s27: a label has fewer figures and no fix; kept for flags only
        return refused.message
    # A label cites only its code's template figures and ``names`` (tests/ui/test_app_details.py).
    return tr(reason_key(refused, reasons), **{**refused.figures, **names})

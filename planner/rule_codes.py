"""The planner's rule violations by code: one member per rule and its English sentence, in one place.

A broken rule is raised as ``planner.errors.RuleViolation(code, figures)``; its text is
``TEMPLATES[code]`` filled with the figures, the sentence the CLI prints. The app renders the
same code and figures in the page's language (ui/reasons.py), so no caller parses a sentence
back. A rule whose sentence reads differently in two cases (with or without expert parallelism,
say) has two codes: a template has no conditions.

Only the standard library is imported here (``planner.errors`` imports this module).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

__all__ = ["TEMPLATES", "Figures", "RuleCode", "render"]

# The numbers and names a sentence cites (ints and floats as the rule computed them).
Figures = Mapping[str, int | float | str]


class RuleCode(StrEnum):
    """One member per rule the planner refuses a model, a layout or a calibration file by."""

    # ModelSpec's checks (planner/model/spec.py)
    HEADS_KV = "heads_kv"
    HIDDEN_HEADS = "hidden_heads"
    EXPERTS_PER_TOKEN = "experts_per_token"
    LAYER_COUNTS = "layer_counts"
    SLIDING_WITHOUT_WINDOW = "sliding_without_window"
    CHUNKED_WITHOUT_CHUNK = "chunked_without_chunk"
    DENSE_LAYERS_NOT_MOE = "dense_layers_not_moe"
    HEAD_DIM_ODD = "head_dim_odd"
    ROTARY_DIM_ODD = "rotary_dim_odd"
    # Layout's checks and resolve (planner/layout.py)
    DP_SHARD_ZERO = "dp_shard_zero"
    VPP_PP = "vpp_pp"
    DDP_SHARD = "ddp_shard"
    EP_DDP = "ep_ddp"
    AC_BLOCKS_MODE = "ac_blocks_mode"  # TrainingConfig's check
    EP_FITS = "ep_fits"
    EP_FITS_TOKEN_SPLIT = "ep_fits_token_split"
    WORLD_SIZE_MIN = "world_size_min"
    WORLD_SIZE = "world_size"
    DEGREES_PRODUCT = "degrees_product"
    PP_STAGES_RANGE = "pp_stages_range"
    # The structural rules (planner/model/structure.py), in their order
    NATIVE_UNSUPPORTED = "native_unsupported"
    TP_HEADS = "tp_heads"
    TP_KV_HEADS = "tp_kv_heads"
    HF_TP = "hf_tp"
    TP_FFN = "tp_ffn"
    QK_NORM_TP = "qk_norm_tp"
    TP_VOCAB = "tp_vocab"
    SEQ_TP_CP = "seq_tp_cp"
    TP_DOMAIN = "tp_domain"
    PP_LAYERS = "pp_layers"
    PP_NATIVE = "pp_native"
    ONE_F_ONE_B_ACCUM = "1f1b_accum"
    VPP_ACCUM = "vpp_accum"
    CP_NATIVE = "cp_native"
    CP_SLIDING = "cp_sliding"
    SEQ_CP = "seq_cp"
    FP8_TP_HF = "fp8_tp_hf"
    EP_DENSE = "ep_dense"
    EP_EXPERTS = "ep_experts"
    EP_NATIVE = "ep_native"
    MOE_TP = "moe_tp"
    MOE_SHARD = "moe_shard"
    MOE_SHARD_EP = "moe_shard_ep"
    # The GPU's precisions (planner/model/estimate.py)
    PRECISION = "precision"
    # Calibration files (planner/catalog/calibration.py; the rate checks of hardware.py, achievable.py)
    CAL_TOML = "cal_toml"
    CAL_UNKNOWN_TABLE = "cal_unknown_table"
    CAL_MISSING_TABLE = "cal_missing_table"
    CAL_MACHINE_FIELD = "cal_machine_field"
    CAL_UNKNOWN_GPU = "cal_unknown_gpu"
    CAL_NOT_A_RATE = "cal_not_a_rate"
    CAL_OVER_CEILING = "cal_over_ceiling"


_C = RuleCode
# str.format templates; every sentence is byte for byte the one the planner printed before codes.
TEMPLATES: dict[RuleCode, str] = {
    _C.HEADS_KV: "num_heads {heads} is not a multiple of num_kv_heads {kv_heads}",
    _C.HIDDEN_HEADS: "hidden_size {hidden} is not divisible by num_heads {heads}",
    _C.EXPERTS_PER_TOKEN: "experts_per_token exceeds num_experts",
    _C.LAYER_COUNTS: "dense_layers, and sliding_layers + chunked_layers, cannot exceed num_layers",
    _C.SLIDING_WITHOUT_WINDOW: "sliding_layers needs a sliding_window",
    _C.CHUNKED_WITHOUT_CHUNK: "chunked_layers needs an attention_chunk",
    _C.DENSE_LAYERS_NOT_MOE: "dense_layers applies to MoE models only",
    _C.HEAD_DIM_ODD: "head_dim {head_dim} is odd: RoPE needs an even head dimension",
    _C.ROTARY_DIM_ODD: "rotary dimension {rotary_dim} (partial_rotary_factor) is odd: RoPE needs it even",
    _C.DP_SHARD_ZERO: "dp_shard must be >= 1, or -1 for 'the rest'",
    _C.VPP_PP: "vpp > 1 (interleaved schedule) needs pp > 1 and the 1f1b schedule",
    _C.DDP_SHARD: "sharding 'none' (DDP) replicates: use dp_replicate, not dp_shard",
    _C.AC_BLOCKS_MODE: "ac_blocks {blocks} needs activation checkpointing 'blocks', not '{mode}'",
    _C.EP_DDP: "expert parallelism (ep > 1) shards experts over dp_shard x cp: use sharding fsdp/zero1/zero2",
    _C.EP_FITS: (
        "ep={ep} must be a multiple of cp={cp} and divide dp_shard*cp={group} (experts borrow the data- and"
        " context-parallel ranks)"
    ),
    _C.EP_FITS_TOKEN_SPLIT: (
        "ep={ep} must be a multiple of cp*tp={cp_tp} and divide dp_shard*cp*tp={group} (experts borrow the data-"
        " and context-parallel ranks and, without expert tp, the tensor-parallel ones)"
    ),
    _C.WORLD_SIZE_MIN: "world size must be >= 1, got {gpus}",
    _C.WORLD_SIZE: "world size {gpus} is not divisible by dp_replicate*tp*pp*cp = {fixed}",
    _C.DEGREES_PRODUCT: (
        "degrees multiply to {product} (dp_replicate={dp_replicate} x dp_shard={dp_shard} x tp={tp} x pp={pp}"
        " x cp={cp}), not the world size {gpus}"
    ),
    _C.PP_STAGES_RANGE: "{stages} pipeline stages need 1..{max_stages} (the layer count, the embedding and the head)",
    _C.NATIVE_UNSUPPORTED: "the native trainer cannot build {features}; use impl 'hf'",
    _C.TP_HEADS: "num_heads {value} is not divisible by tp={tp}",
    _C.TP_KV_HEADS: "num_kv_heads {value} is not divisible by tp={tp}",
    _C.HF_TP: "tensor parallelism of a Hugging Face model needs Llama-style blocks ({features}); use impl 'native'",
    _C.TP_FFN: "ffn_hidden_size {value} is not divisible by tp={tp}",
    _C.QK_NORM_TP: "the native trainer's whole-projection q/k norm (OLMo 2) runs on one rank's heads: use tp=1",
    _C.TP_VOCAB: "vocab_size {vocab} (padded to {padded}, vocabulary-parallel loss) is not divisible by tp={tp}",
    _C.SEQ_TP_CP: "seq_len (sequence parallelism) {seq_len} is not divisible by tp*cp={degree}",
    _C.TP_DOMAIN: "tp={tp} must fit inside one scale-up domain of {domain} GPUs",
    _C.PP_LAYERS: (
        "pp*vpp={stages} pipeline stages exceed {max_stages} (num_layers {num_layers}, plus a stage for the"
        " embedding and one for the head)"
    ),
    _C.PP_NATIVE: "pipeline parallelism (pp > 1) needs impl 'native'",
    _C.ONE_F_ONE_B_ACCUM: (
        "the 1f1b schedule needs grad_accum >= pp ({grad_accum} < {pp}): raise grad_accum or use gpipe"
    ),
    _C.VPP_ACCUM: (
        "the interleaved schedule needs grad_accum ({grad_accum}) divisible by grad_accum // pp"
        " (use a multiple of pp={pp})"
    ),
    _C.CP_NATIVE: "context parallelism (cp > 1) needs impl 'native'",
    _C.CP_SLIDING: "context parallelism has no sliding-window mask (window {window} < seq_len {seq_len})",
    _C.SEQ_CP: "seq_len (load-balanced context parallel) {seq_len} is not divisible by 2*cp={degree}",
    _C.FP8_TP_HF: "fp8 with tensor parallelism needs impl 'native'",
    _C.EP_DENSE: "ep={ep} needs a mixture-of-experts model",
    _C.EP_EXPERTS: "num_experts {experts} is not divisible by ep={ep}",
    _C.EP_NATIVE: "expert parallelism (ep > 1) needs impl 'native' (trainer/moe.py)",
    _C.MOE_TP: "tensor parallelism of native MoE blocks (expert tp) is not built: use tp=1 or ep",
    _C.MOE_SHARD: (
        "MoE expert weights ({local_experts} experts, hidden {hidden}) do not shard evenly over"
        " dp_shard*cp={shards} ranks: use a count that divides {local_experts} or {hidden}"
    ),
    _C.MOE_SHARD_EP: (
        "MoE expert weights ({local_experts} experts per ep rank, hidden {hidden}) do not shard evenly over"
        " dp_shard*cp/ep={shards} ranks: use a count that divides {local_experts} or {hidden}"
    ),
    _C.PRECISION: "{gpu} does not support {precision}",
    # ``where`` names the file (a path, an upload's name) and, for a GPU's rates, its table.
    _C.CAL_TOML: "{where}: invalid TOML: {error}",
    _C.CAL_UNKNOWN_TABLE: "{where}: unknown table(s) {tables} (expected [machine], [gpus.<id>])",
    _C.CAL_MISSING_TABLE: "{where}: table [{table}]: missing or not a table",
    _C.CAL_MACHINE_FIELD: "{where}: field 'machine.{field}': expected a non-empty string",
    # ``detail``: the catalog's own lookup error ("unknown GPU 'x'; did you mean ...").
    _C.CAL_UNKNOWN_GPU: "{where}: table [gpus.{gpu}]: {detail}",
    # ``hint``: " (did you mean 'x'?)" or empty; English only, the other languages leave it out.
    _C.CAL_NOT_A_RATE: "{where}: field '{field}': not an achievable rate{hint}",
    _C.CAL_OVER_CEILING: "{where}: field '{field}': expected at most {ceiling} {limit:g}, got {value!r}",
}


def render(code: RuleCode, figures: Figures) -> str:
    """The English sentence of a violation (the CLI's words, the app's English page)."""
    return TEMPLATES[code].format(**figures)

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
    EXPERT_GROUPS = "expert_groups"
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
    EXPERT_TP_DENSE = "expert_tp_dense"
    EP_EXPERTS = "ep_experts"
    EP_NATIVE = "ep_native"
    EP_FAMILY = "ep_family"
    MOE_TP = "moe_tp"
    MOE_SHARD = "moe_shard"
    MOE_SHARD_EP = "moe_shard_ep"
    # The GPU's precisions (planner/model/estimate.py)
    PRECISION = "precision"
    # What a software stack cannot run (planner/request.py configuration_problem, Stack.refusals)
    STACK_NO_CP = "stack_no_cp"
    STACK_NO_EP = "stack_no_ep"
    STACK_NO_MOE = "stack_no_moe"
    STACK_NO_ALIBI = "stack_no_alibi"
    STACK_SHARDING = "stack_sharding"
    STACK_NO_ZERO1 = "stack_no_zero1"
    STACK_AC_MODE = "stack_ac_mode"
    STACK_NO_PIPELINE = "stack_no_pipeline"
    STACK_HF_PIPELINE = "stack_hf_pipeline"
    STACK_AUTOTP_ZERO3 = "stack_autotp_zero3"
    STACK_PIPELINE_ZERO = "stack_pipeline_zero"
    STACK_INTERLEAVED = "stack_interleaved"
    STACK_EVEN_STAGES = "stack_even_stages"
    STACK_INTERLEAVING = "stack_interleaving"
    STACK_OFFLOAD_ZERO = "stack_offload_zero"
    STACK_IMPL = "stack_impl"
    STACK_COMPILE = "stack_compile"
    STACK_KERNEL = "stack_kernel"
    STACK_PARTITION = "stack_partition"
    STACK_A2A_OVERLAP = "stack_a2a_overlap"
    STACK_TP_OVERLAP = "stack_tp_overlap"
    STACK_A2A_LAYOUT = "stack_a2a_layout"
    STACK_GRAD_BF16 = "stack_grad_bf16"
    STACK_PARAM_REMAINDERS = "stack_param_remainders"
    PARAM_REMAINDERS_LAYOUT = "param_remainders_layout"
    PARAM_REMAINDERS_PRECISION = "param_remainders_precision"
    BF16_GRADS_PRECISION = "bf16_grads_precision"
    STACK_PURE_BF16 = "stack_pure_bf16"
    PURE_BF16_PRECISION = "pure_bf16_precision"
    PURE_BF16_OFFLOAD = "pure_bf16_offload"
    AC_BLOCKS_RANK = "ac_blocks_rank"
    # Calibration files (planner/catalog/calibration.py; the rate checks of hardware.py, achievable.py)
    CAL_TOML = "cal_toml"
    CAL_UNKNOWN_TABLE = "cal_unknown_table"
    CAL_MISSING_TABLE = "cal_missing_table"
    CAL_MACHINE_FIELD = "cal_machine_field"
    CAL_MACHINE_UNKNOWN = "cal_machine_unknown"
    CAL_MACHINE_DATE = "cal_machine_date"
    CAL_DEVICE = "cal_device"
    CAL_UNKNOWN_GPU = "cal_unknown_gpu"
    CAL_NOT_A_RATE = "cal_not_a_rate"
    CAL_OVER_CEILING = "cal_over_ceiling"
    # Hugging Face config.json files (planner/catalog/hf_config.py, hf_keys.py, hf_dense.py, hf_moe.py)
    HF_NO_FILE = "hf_no_file"
    HF_JSON = "hf_json"
    HF_NESTED = "hf_nested"
    HF_TOP_LEVEL = "hf_top_level"
    HF_MISSING_KEY = "hf_missing_key"
    HF_MISSING_TEXT_CONFIG = "hf_missing_text_config"
    HF_MODEL_TYPE = "hf_model_type"
    HF_MODEL_TYPE_ARCHITECTURE = "hf_model_type_architecture"
    HF_ENCODER_DECODER = "hf_encoder_decoder"
    HF_STATE_SPACE = "hf_state_space"
    HF_HEADS_HIDDEN = "hf_heads_hidden"
    HF_KV_HEADS = "hf_kv_heads"
    HF_EXPERTS_PER_TOKEN = "hf_experts_per_token"
    HF_DIMENSIONS = "hf_dimensions"
    HF_NOT_INTEGER = "hf_not_integer"
    HF_OUT_OF_RANGE = "hf_out_of_range"
    HF_NOT_BOOL = "hf_not_bool"
    HF_NOT_OBJECT = "hf_not_object"
    HF_NOT_POSITIVE = "hf_not_positive"
    HF_NOT_FRACTION = "hf_not_fraction"
    HF_NOT_CAP = "hf_not_cap"
    HF_LAYER_COUNT = "hf_layer_count"
    HF_LAYER_TYPES = "hf_layer_types"
    HF_LAYER_LIST = "hf_layer_list"
    HF_NO_ROPE_LAYERS = "hf_no_rope_layers"
    HF_MPT_QK_LN = "hf_mpt_qk_ln"
    HF_MPT_FFN_TYPE = "hf_mpt_ffn_type"
    HF_MPT_ATTN_TYPE = "hf_mpt_attn_type"
    HF_MPT_EXPANSION = "hf_mpt_expansion"
    HF_NEMOTRON_ACT = "hf_nemotron_act"
    HF_MISTRAL3_TEXT = "hf_mistral3_text"
    HF_DEEPSEEK_BIAS = "hf_deepseek_bias"
    HF_DEEPSEEK_V2_ROUTER = "hf_deepseek_v2_router"
    HF_SHARED_EXPERT = "hf_shared_expert"
    HF_LLAMA4_NO_EXPERTS = "hf_llama4_no_experts"
    # Model names (planner/catalog/models.py)
    UNKNOWN_PRESET = "unknown_preset"
    UNKNOWN_MODEL = "unknown_model"
    # A user's input file (planner/limits.py: read_input, read_input_text, check_input); one code per
    # kind of file that is not a regular one, as each reads differently.
    INPUT_UNREADABLE = "input_unreadable"
    INPUT_DIRECTORY = "input_directory"
    INPUT_FIFO = "input_fifo"
    INPUT_CHAR_DEVICE = "input_char_device"
    INPUT_BLOCK_DEVICE = "input_block_device"
    INPUT_SOCKET = "input_socket"
    INPUT_NOT_REGULAR = "input_not_regular"
    INPUT_TOO_LARGE = "input_too_large"
    INPUT_GREW = "input_grew"
    INPUT_NOT_UTF8 = "input_not_utf8"


_C = RuleCode
# The way out of a limit of trainplan's trainer for a family it cannot build natively (trial s26:
# "ep > 1 needs impl 'native'", then "the native trainer cannot build llama4; use impl 'hf'").
OTHER_STACK = "or estimate it under another --stack, e.g. megatron-core"
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
    _C.EXPERT_GROUPS: (
        "n_group {groups} and topk_group {topk_groups} cannot route {experts_per_token} of {experts} experts:"
        " n_group must split the experts into groups of two or more (or be 1), and topk_group of them"
        " (at most n_group) must hold the top {experts_per_token}"
    ),
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
    _C.NATIVE_UNSUPPORTED: (
        "the native trainer cannot build {features}; use impl 'hf' (pp, cp, ep > 1 or fp8 with tp on it: estimate"
        " them under another --stack, e.g. megatron-core)"
    ),
    _C.TP_HEADS: "num_heads {value} is not divisible by tp={tp}",
    _C.TP_KV_HEADS: "num_kv_heads {value} is not divisible by tp={tp}",
    _C.HF_TP: (
        "tensor parallelism of a Hugging Face model needs Llama-style blocks, not {features}: use tp=1, impl"
        " 'native' where the native trainer builds the family, or another --stack (an estimate)"
    ),
    _C.TP_FFN: "ffn_hidden_size {value} is not divisible by tp={tp}",
    _C.QK_NORM_TP: "the native trainer's whole-projection q/k norm (OLMo 2) runs on one rank's heads: use tp=1",
    _C.TP_VOCAB: "vocab_size {vocab} (padded to {padded}, vocabulary-parallel loss) is not divisible by tp={tp}",
    _C.SEQ_TP_CP: "seq_len (sequence parallelism) {seq_len} is not divisible by tp*cp={degree}",
    _C.TP_DOMAIN: (
        "tp={tp} must divide the GPUs of one NVLink (scale-up) domain, {domain} here: tensor parallelism is"
        " timed only over a GPU-to-GPU fabric, not over PCIe or the network"
    ),
    _C.PP_LAYERS: (
        "pp*vpp={stages} pipeline stages exceed {max_stages} (num_layers {num_layers}, plus a stage for the"
        " embedding and one for the head)"
    ),
    _C.PP_NATIVE: f"pipeline parallelism (pp > 1) needs impl 'native' ({OTHER_STACK})",
    _C.ONE_F_ONE_B_ACCUM: (
        "the 1f1b schedule needs grad_accum >= pp ({grad_accum} < {pp}): raise grad_accum or use gpipe"
    ),
    _C.VPP_ACCUM: (
        "the interleaved schedule needs grad_accum ({grad_accum}) divisible by grad_accum // pp"
        " (use a multiple of pp={pp})"
    ),
    _C.CP_NATIVE: f"context parallelism (cp > 1) needs impl 'native' ({OTHER_STACK})",
    _C.CP_SLIDING: "context parallelism has no sliding-window mask (window {window} < seq_len {seq_len})",
    _C.SEQ_CP: "seq_len (load-balanced context parallel) {seq_len} is not divisible by 2*cp={degree}",
    _C.FP8_TP_HF: f"fp8 with tensor parallelism needs impl 'native' ({OTHER_STACK})",
    _C.EP_DENSE: "ep={ep} needs a mixture-of-experts model",
    _C.EXPERT_TP_DENSE: "--no-expert-tp (expert tp 1) needs a mixture-of-experts model: drop it",
    _C.EP_EXPERTS: "num_experts {experts} is not divisible by ep={ep}",
    _C.EP_NATIVE: f"expert parallelism (ep > 1) needs impl 'native' (trainer/moe.py; {OTHER_STACK})",
    # trial s31: for a family the native trainer cannot build, "needs impl 'native'" led to "use impl 'hf'"
    _C.EP_FAMILY: (
        "trainplan's trainer runs expert parallelism (ep > 1) in its native MoE block only, which cannot build"
        " {features}: use --ep 1, or estimate it under another --stack, e.g. megatron-core"
    ),
    _C.MOE_TP: (
        "trainplan's trainer runs native MoE blocks at tp 1, no expert tp (tp={tp} here): use --tp 1 and spread the experts"
        " with --ep, or estimate tp under --stack megatron-core"
    ),
    _C.MOE_SHARD: (
        "MoE expert weights ({local_experts} experts, hidden {hidden}) do not shard evenly over"
        " dp_shard*cp={shards} ranks: use a count that divides {local_experts} or {hidden}"
    ),
    _C.MOE_SHARD_EP: (
        "MoE expert weights ({local_experts} experts per ep rank, hidden {hidden}) do not shard evenly over"
        " dp_shard*cp/ep={shards} ranks: use a count that divides {local_experts} or {hidden}"
    ),
    # the way on in the same line (trial s47 L2): its tensor cores lack the format
    _C.PRECISION: "{gpu} does not support {precision} (no {precision} tensor-core rate): choose bf16 or another GPU",
    _C.STACK_NO_CP: "{stack} has no context parallelism of the kind modelled: use --cp 1, or a stack that has it",
    _C.STACK_NO_EP: (
        "{stack} trains Hugging Face's MoE modules, which run every expert on every rank (DeepSpeed's expert"
        " parallelism needs its own deepspeed.moe layers): use --ep 1, or --stack megatron-core or"
        " megatron-deepspeed for expert parallelism"
    ),
    _C.STACK_NO_MOE: (
        "{stack} (Megatron-LM of 2021-22) has no mixture-of-experts layers, which {model} needs: use --stack"
        " megatron-core, today's Megatron-LM"
    ),
    _C.STACK_NO_ALIBI: (
        "{stack} has no ALiBi attention bias, which {model} needs (its GPT model offers learned, rotary or"
        " no positions): use --stack megatron-deepspeed, BigScience's fork that trained BLOOM with it"
    ),
    _C.STACK_SHARDING: (
        "{stack} shards at most the optimizer state (ZeRO-1), not {sharding}: estimate it with --sharding zero1 or none"
    ),
    _C.STACK_NO_ZERO1: (
        "{stack} has no ZeRO-1 (its data parallelism is FSDP, FSDP without resharding after forward, or"
        " DDP): use --sharding fsdp, zero2 or none"
    ),
    _C.STACK_AC_MODE: (
        "{stack} has no '{ac}' activation checkpointing (its modes: {modes}): use --ac with one of them"
    ),
    _C.STACK_NO_PIPELINE: (
        "{stack} has no pipeline engine: use --pp 1, or a stack that has one (megatron-core, torchtitan)"
    ),
    _C.STACK_HF_PIPELINE: (
        "{stack} trains Hugging Face's modules, which DeepSpeed's pipeline engine cannot run (it trains a"
        " PipelineModule): use --pp 1, or --stack megatron-deepspeed for Megatron-DeepSpeed's 3D parallelism"
    ),
    _C.STACK_AUTOTP_ZERO3: (
        "{stack}'s tensor parallelism on Hugging Face's modules is AutoTP training, which runs ZeRO stage 0-2:"
        " use --sharding zero2, zero1 or none with tp > 1 (not {sharding})"
    ),
    _C.STACK_PIPELINE_ZERO: (
        "{stack} pipelines with DeepSpeed's engine, which runs ZeRO stage 0/1 only: use --sharding zero1 or none"
        " with pp > 1 (not {sharding})"
    ),
    _C.STACK_INTERLEAVED: ("{stack} pipelines with DeepSpeed's engine, which has no interleaved schedule: use --vpp 1"),
    _C.STACK_EVEN_STAGES: (
        "{stack} splits the {layers} layers evenly over pp {pp} x vpp {vpp} stages, which do not divide"
        " them: choose a --pp and --vpp that do, or a stack whose stages may be uneven (megatron-core,"
        " megatron-deepspeed)"
    ),
    _C.STACK_INTERLEAVING: (
        "{stack}'s interleaved schedule (vpp {vpp}) needs pp > 2 and micro-batches divisible by pp"
        " (pp {pp}, {grad_accum} micro-batches): use --vpp 1, or a batch that divides"
    ),
    _C.STACK_OFFLOAD_ZERO: (
        "{stack} offloads a ZeRO stage's sharded optimizer states (DeepSpeed's ZeRO-Offload, Megatron's"
        " distributed optimizer), not unsharded ones: use --sharding zero1 (or more), or drop --offload"
    ),
    _C.STACK_IMPL: "{stack} trains {whose} (impl {modules}): drop --impl {impl}",
    _C.STACK_COMPILE: "{stack} runs its own fused kernels, not torch.compile: drop --compile",
    _C.STACK_KERNEL: (
        "{stack} runs only these attention kernels: {kernels}; not {kernel} (FlashAttention-3 and cuDNN's"
        " come with TransformerEngine): name one of those, or use --stack megatron-core"
    ),
    _C.STACK_PARTITION: (
        "--partition-activations is DeepSpeed's activation checkpointing under Megatron-DeepSpeed;"
        " use --stack megatron-deepspeed (not {stack})"
    ),
    _C.STACK_A2A_LAYOUT: (
        "--moe-a2a-overlap needs what Megatron-Core asserts for it: expert parallelism (ep > 1, a MoE model),"
        " the interleaved schedule under a pipeline (vpp > 1 where pp > 1) and no full or block recompute"
        " (ep {ep}, pp {pp}, vpp {vpp}, ac {ac})"
    ),
    # deepseek-v3's profile already hides its all-to-alls (DualPipe), so the flag is refused there too.
    _C.STACK_A2A_OVERLAP: (
        "--moe-a2a-overlap is Megatron-Core's --overlap-moe-expert-parallel-comm: use --stack megatron-core"
        " (not {stack}); --stack deepseek-v3 already hides its all-to-alls (DualPipe)"
    ),
    # megatron-lm's and megatron-deepspeed's profiles already hide no TP traffic: off would be faster there.
    _C.STACK_TP_OVERLAP: (
        "--no-tp-comm-overlap turns off Megatron-Core's --tp-comm-overlap (userbuffers): use --stack megatron-core"
        " (not {stack}, whose profile has no such overlap to turn off)"
    ),
    _C.STACK_GRAD_BF16: (
        "--grad-reduce-in-bf16 is Megatron-Core's (bf16 gradient buffers): use --stack megatron-core (not {stack})"
    ),
    _C.STACK_PARAM_REMAINDERS: (
        "--precision-aware-optimizer is Megatron-Core's --use-precision-aware-optimizer: use --stack megatron-core"
        " (not {stack})"
    ),
    _C.BF16_GRADS_PRECISION: (
        "--grad-reduce-in-bf16 needs bf16 weights (--precision bf16 or fp8; now {precision}): Megatron-Core's"
        " gradient buffer takes the weights' dtype once it is not fp32"
    ),
    _C.PARAM_REMAINDERS_LAYOUT: (
        "--precision-aware-optimizer needs Megatron's distributed optimizer (--sharding zero1, zero2 or fsdp; now"
        " {sharding}) and bf16 weights (--precision bf16 or fp8; now {precision}): 16-bit remainders rebuild an"
        " fp32 master only beside bf16 weights"
    ),
    _C.PARAM_REMAINDERS_PRECISION: (
        "--precision-aware-optimizer needs bf16 weights (--precision bf16 or fp8; now {precision}): 16-bit"
        " remainders rebuild an fp32 master only beside bf16 weights"
    ),
    _C.STACK_PURE_BF16: (
        "--pure-bf16 is trainplan's, torchtitan's (training.dtype bfloat16) and hf-trainer's (a model loaded in"
        " bf16, no --bf16): not {stack}'s, which keeps a master copy of the weights beside them"
    ),
    _C.PURE_BF16_PRECISION: ("--pure-bf16 trains bf16 weights: use --precision bf16 (now {precision})"),
    _C.PURE_BF16_OFFLOAD: (
        "--pure-bf16 with host offload is not modelled: its CPU optimizer is timed and sized in fp32 only;"
        " drop {offload_flag} (or --pure-bf16)"
    ),
    _C.AC_BLOCKS_RANK: (
        "--ac-blocks {blocks}: a pp rank holds at most {most} blocks ({layers} over pp {pp}, vpp {vpp});"
        " checkpoint at most {most}, or use --ac full"
    ),
    # ``where`` names the file (a path, an upload's name) and, for a GPU's rates, its table.
    _C.CAL_TOML: "{where}: invalid TOML: {error}",
    _C.CAL_UNKNOWN_TABLE: "{where}: unknown table(s) {tables} (expected [machine], [gpus.<id>])",
    _C.CAL_MISSING_TABLE: "{where}: table [{table}]: missing or not a table",
    _C.CAL_MACHINE_FIELD: "{where}: field 'machine.{field}': expected a non-empty string",
    _C.CAL_MACHINE_UNKNOWN: "{where}: field 'machine.{field}': unknown (expected {expected})",
    _C.CAL_MACHINE_DATE: "{where}: field 'machine.date': expected a date YYYY-MM-DD, got {value!r}",
    # ``other``: the catalog entry the device is (its ``device_name``, else the name matcher's).
    _C.CAL_DEVICE: "{where}: [machine] device {device!r} is {other}, not {gpu}: the rates are {other}'s",
    # ``detail``: the catalog's own lookup error ("unknown GPU 'x'; did you mean ...").
    _C.CAL_UNKNOWN_GPU: "{where}: table [gpus.{gpu}]: {detail}",
    # ``hint``: " (did you mean 'x'?)" or empty; English only, the other languages leave it out.
    _C.CAL_NOT_A_RATE: "{where}: field '{field}': not an achievable rate{hint}",
    _C.CAL_OVER_CEILING: "{where}: field '{field}': expected at most {ceiling} {limit:g}, got {value!r}",
    # A config.json's rules: ``where`` names the file; ``field`` a key as the file spells it; ``value``
    # (and ``model_type``) the file's value as Python writes it (repr).
    _C.HF_NO_FILE: "{where}: no such config file",
    _C.HF_JSON: "{where}: not valid JSON ({error})",
    _C.HF_NESTED: "{where}: nested too deeply, not a model config",
    _C.HF_TOP_LEVEL: "{where}: top level must be a JSON object, got {type}",
    _C.HF_MISSING_KEY: "{where}: missing key {field!r}",
    _C.HF_MISSING_TEXT_CONFIG: (
        "{where}: missing key 'text_config' (the language model; the vision tower is not planned)"
    ),
    _C.HF_MODEL_TYPE: (
        "{where}: unsupported model_type {model_type} (supported: {supported}); docs/extending.md says how"
        " to add a reader"
    ),
    # ``architecture``: the file's class a reader builds; ``family``: that reader's model_type.
    _C.HF_MODEL_TYPE_ARCHITECTURE: (
        "{where}: unsupported model_type {model_type}, but its architectures name {architecture}:"
        " set model_type to {family}"
    ),
    _C.HF_ENCODER_DECODER: (
        "{where}: model_type {model_type} is an encoder-decoder model (is_encoder_decoder): trainplan"
        " plans decoder-only transformers"
    ),
    _C.HF_STATE_SPACE: (
        "{where}: model_type {model_type} has state-space (Mamba) layers: trainplan plans decoder-only transformers"
    ),
    _C.HF_HEADS_HIDDEN: "{where}: {heads} attention heads do not divide hidden size {hidden}",
    _C.HF_KV_HEADS: "{where}: {kv_heads} key/value heads do not divide {heads} attention heads",
    _C.HF_EXPERTS_PER_TOKEN: "{where}: num_experts_per_tok exceeds num_local_experts",
    # ``detail``: ModelSpec's own refusal, one line; ``rule`` and its figures, when it has a code.
    _C.HF_DIMENSIONS: "{where}: invalid model dimensions: {detail}",
    _C.HF_NOT_INTEGER: "{where}: {field!r} must be an integer, got {value}",
    _C.HF_OUT_OF_RANGE: "{where}: {field!r} = {value} is out of range (1..{limit})",
    _C.HF_NOT_BOOL: "{where}: {field!r} must be true or false, got {value}",
    _C.HF_NOT_OBJECT: "{where}: {field!r} must be an object",
    _C.HF_NOT_POSITIVE: "{where}: {field!r} must be a positive number, got {value}",
    _C.HF_NOT_FRACTION: "{where}: {field!r} must be a number in (0, 1], got {value}",
    _C.HF_NOT_CAP: "{where}: {field!r} must be a positive number or null, got {value}",
    _C.HF_LAYER_COUNT: "{where}: {field!r} must be an integer in 0..{limit}, got {value}",
    _C.HF_LAYER_TYPES: (
        "{where}: 'layer_types' must list one attention type per layer ({layers}): full_attention,"
        " sliding_attention or chunked_attention"
    ),
    # ``field``: 'mlp_only_layers' (quoted) or text_config.moe_layers, as each reader wrote it.
    _C.HF_LAYER_LIST: "{where}: {field} must be a list of layer indices, 0 to {last}",
    _C.HF_NO_ROPE_LAYERS: "{where}: text_config.no_rope_layers must list one flag per layer ({layers})",
    _C.HF_MPT_QK_LN: "{where}: attn_config.qk_ln is not supported",
    _C.HF_MPT_FFN_TYPE: "{where}: ffn_config.ffn_type {value} is not supported (only 'mptmlp')",
    _C.HF_MPT_ATTN_TYPE: "{where}: attn_config.attn_type must be a string, got {type}",
    _C.HF_MPT_EXPANSION: "{where}: 'expansion_ratio' = {value} is not a sensible positive number",
    _C.HF_NEMOTRON_ACT: "{where}: hidden_act {value} is not supported for nemotron (relu2 or a GeLU)",
    _C.HF_MISTRAL3_TEXT: "{where}: text_config.model_type {value} is not supported for mistral3 (only 'mistral' and 'ministral3')",
    _C.HF_DEEPSEEK_BIAS: "{where}: attention_bias is not supported for {family}",
    # transformers 5.25's DeepseekV2TopkRouter: greedy or group-limited top k of a softmax, always
    # times routed_scaling_factor (DeepSeek's own code renormalises instead where norm_topk_prob).
    _C.HF_DEEPSEEK_V2_ROUTER: (
        "{where}: {field} {value} is not supported for deepseek_v2: transformers' router takes topk_method"
        " 'greedy' or 'group_limited_greedy' and never renormalises (norm_topk_prob false, as released)"
    ),
    _C.HF_SHARED_EXPERT: (
        "{where}: shared_expert_intermediate_size {shared} is not a multiple of moe_intermediate_size {width}"
        " (the shared expert is planned as whole experts)"
    ),
    _C.HF_LLAMA4_NO_EXPERTS: "{where}: a Llama 4 text model without expert layers is not supported",
    # ``hint``: "; did you mean ...?" or "; presets: ..."; English only, the other languages leave it out.
    _C.UNKNOWN_PRESET: "unknown model preset {name!r}{hint}",
    _C.UNKNOWN_MODEL: "{name!r} is neither a model preset nor an existing config path{hint}",
    # ``where``: the path as given; ``what``: the reader's noun ("calibration file", "plan file");
    # ``error``: the OS's own words (strerror, "Permission denied").
    _C.INPUT_UNREADABLE: "{where}: cannot read the {what} ({error})",
    _C.INPUT_DIRECTORY: "{where}: a directory, not a {what} (give a regular file)",
    _C.INPUT_FIFO: "{where}: a FIFO, not a {what} (give a regular file)",
    _C.INPUT_CHAR_DEVICE: "{where}: a character device, not a {what} (give a regular file)",
    _C.INPUT_BLOCK_DEVICE: "{where}: a block device, not a {what} (give a regular file)",
    _C.INPUT_SOCKET: "{where}: a socket, not a {what} (give a regular file)",
    _C.INPUT_NOT_REGULAR: "{where}: not a regular file, not a {what} (give a regular file)",
    _C.INPUT_TOO_LARGE: "{where}: {size_bytes} bytes, over {limit_bytes} bytes: not a {what}",
    # The file grew past the limit while it was read (its size was within it when opened).
    _C.INPUT_GREW: "{where}: over {limit_bytes} bytes: not a {what}",
    _C.INPUT_NOT_UTF8: "{where}: not UTF-8 text (byte {byte}): not a {what}",
}


def render(code: RuleCode, figures: Figures) -> str:
    """The English sentence of a violation (the CLI's words, the app's English page)."""
    return TEMPLATES[code].format(**figures)

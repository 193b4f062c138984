"""The models the NeMo-style held-out rows name (validation/nemo_blackwell.py, validation/mlperf.py):
each a published shape and size, built by the calibration reader's own rules
(validation/published_rows.py ``model_for``), so the 8B here is the 8B there."""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.models import get_preset
from planner.model.spec import ModelSpec
from validation.published_rows import MEGATRON_GPT_VOCAB, PARAM_COUNT_TOLERANCE, SkipReason, model_for


@dataclass(frozen=True)
class Architecture:
    """A model the rows name: its shapes as its publisher gives them and its published size."""

    name: str
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int
    published_params: float
    params_source: str
    experts: int = 1
    experts_per_token: int = 1
    preset: str | None = None  # the catalog preset with these shapes (MoE; dense ones are matched by shape)


LLAMA3_8B = Architecture("llama3-8b", 32, 4096, 14336, 32, 8, 128256, 8.03e9, "Meta Llama 3 model card")
LLAMA3_70B = Architecture("llama3-70b", 80, 8192, 28672, 64, 8, 128256, 70.6e9, "Meta Llama 3 model card")
# Llama 2 (Touvron et al. 2023, Table 1; the Hugging Face configs): 4,096-token context, vocabulary
# 32,000, the 70B with 8 kv heads (validation/amd_runs.py's Primus rows).
LLAMA2_7B = Architecture("llama2-7b", 32, 4096, 11008, 32, 32, 32000, 6.74e9, "Meta Llama 2 model card")
LLAMA2_70B = Architecture("llama2-70b", 80, 8192, 28672, 64, 8, 32000, 68.98e9, "Meta Llama 2 model card")
LLAMA31_405B = Architecture("llama3.1-405b", 126, 16384, 53248, 128, 8, 128256, 405.9e9, "Meta Llama 3.1 model card")
# Megatron GPT-3 175B (Brown et al. 2020, Table 2.1): 4h MLP; vocabulary padded as in published_rows.
GPT3_175B = Architecture("gpt3-175b", 96, 12288, 49152, 96, 96, MEGATRON_GPT_VOCAB, 175e9, "Brown et al. 2020")
# Nemotron-4 15B (arXiv:2402.16819, Table 1: 3.2B embedding + 12.5B non-embedding parameters) and
# Nemotron-4 340B (arXiv:2406.11704, Table 1): squared ReLU over a 4h MLP, GQA with 8 kv heads.
NEMOTRON4_15B = Architecture("nemotron4-15b", 32, 6144, 24576, 48, 8, 256000, 15.7e9, "arXiv:2402.16819")
NEMOTRON4_340B = Architecture("nemotron4-340b", 96, 18432, 73728, 96, 8, 256000, 341e9, "arXiv:2406.11704")
# Mixtral 8x7B / 8x22B (mistralai config.json v0.1; Mistral AI announcements: 46.7B and 141B in all).
MIXTRAL_8X7B = Architecture(
    "mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, 46.7e9, "Mistral AI, Mixtral of experts", 8, 2, "mixtral-8x7b"
)
MIXTRAL_8X22B = Architecture(
    "mixtral-8x22b", 56, 6144, 16384, 48, 8, 32000, 141e9, "Mistral AI, Cheaper, Better, Faster, Stronger", 8, 2
)

# The names the sources print (lower case, '_' read as '-'). NeMo 25.02's 'LLAMA3-405B' is Llama 3.1 405B.
ARCHITECTURES: dict[str, Architecture] = {
    **dict.fromkeys(("llama3-8b", "llama3.1-8b"), LLAMA3_8B),
    **dict.fromkeys(("llama3-70b", "llama3.1-70b"), LLAMA3_70B),
    **dict.fromkeys(("llama3-405b", "llama3.1-405b"), LLAMA31_405B),
    "llama2-7b": LLAMA2_7B,
    "llama2-70b": LLAMA2_70B,
    "gpt3-175b": GPT3_175B,
    **dict.fromkeys(("nemotron-15b", "nemotron4-15b"), NEMOTRON4_15B),
    **dict.fromkeys(("nemotron-340b", "nemotron4-340b"), NEMOTRON4_340B),
    "mixtral-8x7b": MIXTRAL_8X7B,
    "mixtral-8x22b": MIXTRAL_8X22B,
}


def architecture_for(model_name: str) -> Architecture | None:
    return ARCHITECTURES.get(model_name.strip().lower().replace("_", "-"))


def _dense_model(arch: Architecture, model_name: str, seq_len: int) -> ModelSpec | SkipReason:
    """Through published_rows.model_for: Llama shapes become the presets, Nemotron-4 its
    squared-ReLU two-matrix MLP with LayerNorm and RoPE, GPT-3 Megatron's GPT; tied or untied
    embeddings, whichever lands nearer the published count, which must hold within 6 %."""
    cells = {
        "model_name": model_name,
        "n_layers": str(arch.layers),
        "hidden": str(arch.hidden),
        "ffn_hidden": str(arch.ffn),
        "n_heads": str(arch.heads),
        "n_kv_heads": str(arch.kv_heads),
        "vocab": str(arch.vocab),
        "seq_len": str(seq_len),
        "n_params": str(arch.published_params),
    }
    return model_for(cells, [])


def _moe_model(arch: Architecture, seq_len: int) -> ModelSpec | SkipReason:
    """Mixtral: the catalog preset where one has its shapes (8x7B), else built the same way."""
    spec = ModelSpec(
        name=arch.name,
        family="mixtral",
        num_layers=arch.layers,
        hidden_size=arch.hidden,
        ffn_hidden_size=arch.ffn,
        num_heads=arch.heads,
        num_kv_heads=arch.kv_heads,
        vocab_size=arch.vocab,
        max_seq_len=max(seq_len, 4096),
        num_experts=arch.experts,
        experts_per_token=arch.experts_per_token,
    )
    if arch.preset is not None:
        preset = get_preset(arch.preset)
        spec = preset.model_copy(update={"max_seq_len": max(preset.max_seq_len, seq_len)})
    if abs(spec.num_params() / arch.published_params - 1) > PARAM_COUNT_TOLERANCE:
        return SkipReason.PARAMS_MISMATCH
    return spec


def model_for_row(model_name: str, seq_len: int) -> ModelSpec | SkipReason:
    arch = architecture_for(model_name)
    if arch is None:
        return SkipReason.NO_MODEL_DIMS
    return _moe_model(arch, seq_len) if arch.experts > 1 else _dense_model(arch, model_name, seq_len)

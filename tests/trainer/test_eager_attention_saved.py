"""What transformers' eager Gemma 2 attention saves for backward of its s x s scores, counted by
autograd's saved-tensor hooks on a tiny model, is what the planner's memory model charges per
score (``ModelingSettings.eager_softcap_attention_saved_bytes_per_score``, planner/model/attention_scores.py)."""

from __future__ import annotations

import pytest
import torch

from planner.model.settings import DEFAULT_SETTINGS

transformers = pytest.importorskip("transformers")

SEQ, HEADS, LAYERS = 32, 4, 2  # layer 0 slides a window, layer 1 attends globally


def saved_score_bytes(dtype: torch.dtype) -> float:
    """Bytes of distinct saved storages shaped like score matrices, per score and block."""
    config = transformers.Gemma2Config(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=256,
        sliding_window=8,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    assert config.attn_logit_softcapping and config.attention_dropout == 0.0
    model = transformers.Gemma2ForCausalLM(config).to(dtype).train()
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.dim() >= 3 and tuple(t.shape[-2:]) == (SEQ, SEQ) and t.numel() >= HEADS * SEQ * SEQ:
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    tokens = torch.randint(0, 256, (1, SEQ))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=tokens).logits.sum()
    return sum(storages.values()) / (LAYERS * HEADS * SEQ * SEQ)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_eager_softcap_attention_saves_what_the_planner_charges(dtype):
    assert saved_score_bytes(dtype) == DEFAULT_SETTINGS.eager_softcap_attention_saved_bytes_per_score

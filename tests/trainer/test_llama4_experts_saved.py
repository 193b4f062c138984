"""What transformers' Llama 4 MoE layer keeps for backward, counted by autograd's saved-tensor
hooks on a tiny layer, is what the planner's Hugging Face block charges: every expert's SwiGLU
tensors for every token (``ModelShape.hf_experts_dense``, trial s36), not the routed copies."""

from __future__ import annotations

import pytest
import torch

from planner.catalog.hf_config import model_from_hf_config
from planner.model.block import block_table
from planner.model.block_rows import Part

transformers = pytest.importorskip("transformers")

HIDDEN, FFN, EXPERTS, TOKENS = 64, 128, 8, 32


def measured_bytes_per_token(config) -> float:
    """Distinct saved storages of one MoE layer's forward that are not its weights, per token."""
    from transformers.models.llama4.modeling_llama4 import Llama4TextMoe

    layer = Llama4TextMoe(config).to(torch.bfloat16).train()
    weights = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    x = torch.randn(1, TOKENS, HIDDEN, dtype=torch.bfloat16, requires_grad=True)
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in weights and ptr != x.untyped_storage().data_ptr():  # the input: the norm's row
            storages[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x)
    return sum(storages.values()) / TOKENS


def test_llama4s_hf_moe_layer_saves_every_experts_tensors(tmp_path):
    config = transformers.Llama4TextConfig(
        hidden_size=HIDDEN,
        intermediate_size=FFN,
        intermediate_size_mlp=2 * FFN,
        num_local_experts=EXPERTS,
        num_experts_per_tok=1,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=256,
        interleave_moe_layer_step=1,
    )
    config.save_pretrained(tmp_path)
    model = model_from_hf_config(tmp_path / "config.json")
    assert model.hf_experts_dense and model.num_experts == EXPERTS and model.experts_per_token == 1
    rows = [t for t in block_table(model, hf_modules=True).saved if t.part in (Part.MLP, Part.ROUTER)]
    charged = sum(t.elements * t.copies * (4 if t.fp32 else 2) for t in rows)
    # The router's top-k indices and bf16 scores (8 + 2 E bytes a token) are not charged: 0.2 %.
    assert measured_bytes_per_token(config) == pytest.approx(charged, rel=0.01)
    routed = [t for t in block_table(model).saved if t.part in (Part.MLP, Part.ROUTER)]
    assert sum(t.elements * t.copies * (4 if t.fp32 else 2) for t in routed) < charged / 4  # one expert's

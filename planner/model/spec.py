"""Architecture description of a decoder-only transformer, and its parameter count.

A ``ModelSpec`` is pure data: presets and Hugging Face ``config.json`` files (see
``planner.catalog.models``) are both turned into one. Counts follow the module structure of the
reference implementations (Hugging Face transformers), so they match the real models.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.model.block import Part, block_table, root_table

MlpKind = Literal["swiglu", "gelu"]
NormKind = Literal["rmsnorm", "layernorm"]
PositionKind = Literal["rope", "learned", "alibi"]


class ParamCounts(BaseModel):
    """Parameter count breakdown (numbers of parameters, not bytes)."""

    model_config = ConfigDict(frozen=True)

    embedding: int  # token (+ learned position) embeddings, embedding norm
    attention_per_layer: int
    mlp_per_layer: int  # all experts for MoE
    norms_per_layer: int
    final_norm: int
    lm_head: int  # 0 when tied to the embedding
    router_per_layer: int = 0
    num_layers: int

    @property
    def per_layer(self) -> int:
        return self.attention_per_layer + self.mlp_per_layer + self.norms_per_layer + self.router_per_layer

    @property
    def total(self) -> int:
        return self.embedding + self.num_layers * self.per_layer + self.final_norm + self.lm_head


class ModelSpec(BaseModel):
    """Decoder-only transformer dimensions. ``head_dim`` defaults to hidden/heads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    family: str = "llama"  # llama, mistral, qwen2, mixtral, gpt2, gpt_neox, mpt, bloom
    num_layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    ffn_hidden_size: int = Field(ge=1)  # per expert for MoE; gate/up width for SwiGLU
    num_heads: int = Field(ge=1)
    num_kv_heads: int = Field(ge=1)
    head_dim: int | None = Field(None, ge=1)
    vocab_size: int = Field(ge=1)
    max_seq_len: int = Field(2048, ge=1)
    tied_embeddings: bool = False
    mlp: MlpKind = "swiglu"
    norm: NormKind = "rmsnorm"
    position: PositionKind = "rope"
    qkv_bias: bool = False  # q/k/v projection biases (gpt2, neox, bloom, qwen2)
    out_bias: bool = False  # attention output projection bias
    mlp_bias: bool = False
    norm_bias: bool = False  # LayerNorm with a bias term
    embedding_norm: bool = False  # BLOOM's word_embeddings_layernorm
    num_experts: int = Field(1, ge=1)  # MoE: experts per layer
    experts_per_token: int = Field(1, ge=1)

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} is not a multiple of num_kv_heads {self.num_kv_heads}")
        if self.head_dim is None and self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}")
        if self.experts_per_token > self.num_experts:
            raise ValueError("experts_per_token exceeds num_experts")
        if self.position == "rope" and self.dim_head % 2:
            # RoPE rotates pairs of channels: the trainer cannot build an odd head dimension.
            raise ValueError(f"head_dim {self.dim_head} is odd: RoPE needs an even head dimension")
        return self

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads

    @property
    def q_size(self) -> int:
        return self.num_heads * self.dim_head

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.dim_head

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    def param_counts(self) -> ParamCounts:
        """Derived from the block-operations table (``planner/model/block.py``)."""
        block, root = block_table(self), root_table(self)
        return ParamCounts(
            embedding=root.embedding_params,
            attention_per_layer=block.params(Part.ATTENTION),
            mlp_per_layer=block.params(Part.MLP),
            norms_per_layer=block.params(Part.NORMS),
            router_per_layer=block.params(Part.ROUTER),
            final_norm=root.final_norm.params,
            lm_head=root.lm_head.params,
            num_layers=self.num_layers,
        )

    def num_params(self) -> int:
        return self.param_counts().total

    def num_active_params(self) -> int:
        """Parameters touched per token (MoE: only the routed experts' MLPs)."""
        c = self.param_counts()
        mlp_active = c.mlp_per_layer // self.num_experts * self.experts_per_token
        per_layer = c.attention_per_layer + mlp_active + c.norms_per_layer + c.router_per_layer
        return c.embedding + self.num_layers * per_layer + c.final_norm + c.lm_head

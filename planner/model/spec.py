"""Architecture description of a decoder-only transformer, and its parameter count.

A ``ModelSpec`` is pure data: presets and Hugging Face ``config.json`` files (see
``planner.catalog.models``) are both turned into one. Its fields are ``ModelShape``'s
(``planner/model/shape.py``); its counts follow the module structure of the reference
implementations (Hugging Face transformers), so they match the real models.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from planner.model.block import block_table, layer_tables, mtp_module_params, root_table
from planner.model.block_rows import Part
from planner.model.shape import ModelShape


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
    # Models whose layers differ (DeepSeek's first dense layers): how many blocks have a dense
    # MLP instead of the experts, and that MLP's parameters. The ``*_per_layer`` fields above
    # describe the other (MoE) blocks.
    dense_layers: int = 0
    dense_mlp_per_layer: int = 0
    # Multi-token-prediction modules (DeepSeek-V3): not part of ``total`` (transformers does not
    # build them and the trainer does not train them), reported separately.
    mtp: int = 0

    @property
    def per_layer(self) -> int:
        return self.attention_per_layer + self.mlp_per_layer + self.norms_per_layer + self.router_per_layer

    @property
    def dense_per_layer(self) -> int:
        return self.attention_per_layer + self.dense_mlp_per_layer + self.norms_per_layer

    def heaviest_blocks(self, layers):
        """Parameters of the ``layers`` heaviest blocks (a number or an array): the most one
        pipeline stage of that many blocks holds when the layers are not all alike."""
        moe = (self.per_layer, self.num_layers - self.dense_layers)
        (heavy, heavy_count), (light, _) = sorted((moe, (self.dense_per_layer, self.dense_layers)), reverse=True)
        first = np.minimum(layers, heavy_count)
        return first * heavy + (layers - first) * light

    @property
    def blocks(self) -> int:
        return (self.num_layers - self.dense_layers) * self.per_layer + self.dense_layers * self.dense_per_layer

    @property
    def total(self) -> int:
        return self.embedding + self.blocks + self.final_norm + self.lm_head


class ModelSpec(ModelShape):
    """A ``ModelShape`` with its parameter counts (the ``planner/model/block.py`` tables)."""

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
            dense_layers=self.dense_layers,
            dense_mlp_per_layer=block_table(self, dense=True).params(Part.MLP) if self.dense_layers else 0,
            mtp=self.mtp_layers * mtp_module_params(self),
        )

    def num_params(self) -> int:
        return self.param_counts().total

    def num_active_params(self) -> int:
        """Parameters touched per token: MoE blocks count their routed ``experts_per_token`` MLPs
        (plus shared experts and router), dense blocks everything; MTP modules excluded. The input
        embedding counts, as DeepSeek-V3's, Mixtral's and Qwen3-MoE's cards count it (37B, 12.9B,
        3.3B); gpt-oss's card leaves it out (5.13B active for 120b, 5.71B here)."""
        root = root_table(self)
        blocks = sum(count * table.active_params for count, table in layer_tables(self))
        return root.embedding_params + blocks + root.final_norm.params + root.lm_head.params

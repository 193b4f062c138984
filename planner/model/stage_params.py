"""The parameters each pipeline stage holds, before tensor-parallel splitting: the blocks of the
rank with the most of them (uneven stages, planner/model/pipeline.py), the embedding and head
where they sit, and a MoE rank's share of the experts. Split out of memory.py; memory, the
optimizer, communication and host time each read it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.model.block import grown_position_params
from planner.model.candidates import Candidates
from planner.model.moe import held_fraction, routed_expert_params_per_layer
from planner.model.pipeline import PipelineRank, max_rank_layers, pipeline_ranks
from planner.model.rowwise import STAGE_COLUMNS, once_per_table, per_distinct_row
from planner.model.spec import ModelSpec


@dataclass(frozen=True)
class StageParams:
    """Parameter counts held by one pipeline stage, before tensor-parallel splitting."""

    blocks: np.ndarray  # transformer-block parameters on the stage
    root: np.ndarray  # embedding / final norm / LM head on the stage
    per_block: float
    # MoE: the routed experts' share of ``blocks`` / ``per_block``, and the fraction of them one
    # rank holds in units of 1/tp (1/ep; ``moe.held_fraction``). Zero / one for dense models.
    experts: np.ndarray | float = 0.0
    per_block_experts: float = 0.0
    expert_held: np.ndarray | float = 1.0

    @property
    def total(self) -> np.ndarray:
        return self.blocks + self.root

    @property
    def held(self) -> np.ndarray:
        """Parameters one rank holds before data-parallel sharding: the dense ones and its ep
        group's share of the experts."""
        return self.total - self.experts * (1.0 - self.expert_held)

    @property
    def held_per_block(self):
        return self.per_block - self.per_block_experts * (1.0 - self.expert_held)


def layers_per_stage(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Blocks on the pp rank with the most of them (uneven stages: planner/model/pipeline.py)."""
    return max_rank_layers(model.num_layers, c)


def stage_params(model: ModelSpec, c: Candidates, rank: PipelineRank) -> StageParams:
    """The rank's blocks (uneven stages); the embedding on the first stage, norm + head on the
    last (a tied head keeps its own copy of the embedding on the last stage once pp > 1: its
    gradient is all-reduced with the first stage's, ``step_comm.tied_embedding_sync_s``)."""
    counts = model.param_counts()
    embedding = counts.embedding + grown_position_params(model, c.seq_len)  # a GPT past its table grows it
    head = counts.final_norm + (counts.lm_head or counts.embedding)
    whole = embedding + counts.final_norm + counts.lm_head
    root = np.where(c.pp == 1, whole, np.where(rank.embedding, embedding, 0.0) + np.where(rank.head, head, 0.0))
    experts = float(routed_expert_params_per_layer(model))
    return StageParams(
        # The heaviest blocks when they differ (DeepSeek: a stage of expert blocks, not its dense ones).
        blocks=counts.heaviest_blocks(rank.layers),
        root=root.astype(float),
        per_block=float(counts.per_layer),
        # The heaviest blocks are expert blocks: at most moe_layers of the rank's blocks hold experts.
        experts=np.minimum(rank.layers, model.moe_layers) * experts,
        per_block_experts=experts,
        expert_held=held_fraction(c),
    )


def busiest_stage(model: ModelSpec, c: Candidates) -> StageParams:
    """The parameters of the pp rank that holds the most of them, row by row (kept for the last
    table: comm, optimizer and host time each ask for it)."""
    # Once per distinct layout (rowwise.py): a stage's parameters depend on nothing else.
    busiest = lambda: per_distinct_row(lambda rows: _busiest_stage(model, rows), c, STAGE_COLUMNS)  # noqa: E731
    return once_per_table("busiest_stage", c, model, busiest)


def _busiest_stage(model: ModelSpec, c: Candidates) -> StageParams:
    stages = [stage_params(model, c, rank) for rank in pipeline_ranks(model.num_layers, c)]
    busiest = np.argmax(np.stack([stage.total for stage in stages]), axis=0)
    pick = lambda field: np.choose(busiest, [np.broadcast_to(getattr(st, field), busiest.shape) for st in stages])  # noqa: E731
    return StageParams(
        blocks=pick("blocks"),
        root=pick("root"),
        per_block=stages[0].per_block,
        experts=pick("experts"),
        per_block_experts=stages[0].per_block_experts,
        expert_held=stages[0].expert_held,
    )


def busiest_stage_params(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Parameters (before tp) of the pp rank that holds the most of them."""
    return busiest_stage(model, c).total

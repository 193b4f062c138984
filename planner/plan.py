"""The typed results that flow one way: planner -> plan.json -> trainer.

``Estimate`` is one configuration's prediction with its breakdowns (the JSON of
``trainplan estimate``); ``Plan`` adds what the trainer needs to run it. Both are frozen
pydantic models, so ``emit`` only serialises and the trainer only validates.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from planner.fmt import one_line
from planner.layout import Layout, TrainingConfig
from planner.model.spec import ModelSpec

PLAN_SCHEMA_VERSION = 1
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class MemoryEstimate(BaseModel):
    model_config = _FROZEN
    peak_gib: float  # predicted max_memory_allocated
    reserved_gib: float  # predicted max_memory_reserved (caching allocator)
    capacity_gib: float  # usable device memory
    headroom_fraction: float  # the fit rule: reserved <= capacity * (1 - headroom)
    breakdown_gib: dict[str, float]


class TimeEstimate(BaseModel):
    model_config = _FROZEN
    step_s: float
    breakdown_s: dict[str, float]


class ThroughputEstimate(BaseModel):
    model_config = _FROZEN
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float  # model FLOPs (6N + attention) / dense peak
    hfu: float  # hardware FLOPs incl. recompute / dense peak
    model_flops_per_token: float
    hardware_flops_per_token: float


class Estimate(BaseModel):
    """One configuration's prediction; ``reason`` says why it is infeasible."""

    model_config = _FROZEN
    feasible: bool
    reason: str | None = None
    fix: str | None = None
    gpu: str
    num_gpus: int
    num_nodes: int
    memory: MemoryEstimate
    time: TimeEstimate
    throughput: ThroughputEstimate
    layout: dict
    global_batch_tokens: int
    time_to_train_h: float | None = None
    cost_usd: float | None = None
    energy_kwh: float | None = None


class Plan(BaseModel):
    """A runnable plan: model, hardware, layout, training settings and the prediction."""

    model_config = _FROZEN
    schema_version: int = PLAN_SCHEMA_VERSION
    model: ModelSpec
    hf_config_path: str | None = None  # set when the model came from a local config.json
    gpu: str
    num_gpus: int = Field(ge=1)
    num_nodes: int = Field(ge=1)
    gpus_per_node: int = Field(ge=1)
    layout: Layout
    training: TrainingConfig
    training_tokens: float | None = None
    price_per_gpu_hour_usd: float | None = None
    estimate: Estimate

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_json() + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        """Read a plan file; raises ValueError naming the file when it is not a valid plan."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise ValueError(f"{path}: cannot read plan file ({exc.strerror})") from None
        try:
            return cls.model_validate_json(text)
        except Exception as exc:  # pydantic.ValidationError or JSON decode error
            raise ValueError(f"{path}: not a valid trainplan plan ({one_line(exc, verbatim=True)})") from None

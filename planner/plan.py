"""The typed results that flow one way: planner -> plan.json -> trainer.

``Estimate`` is one configuration's prediction with its breakdowns (the JSON of
``trainplan estimate``); ``Plan`` adds what the trainer needs to run it, and the calibration
file it was made with (``PlanCalibration``, planner/plan_calibration.py). All are frozen pydantic models, so ``emit`` only
serialises and the trainer only validates.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from planner.catalog.prices import PriceBasis, PriceKind, PriceOffer, billed_gpus
from planner.catalog.terms import TermBilling, rebilled
from planner.estimate_parts import GoodputEstimate, MemoryEstimate, ThroughputEstimate, TimeEstimate
from planner.fix_codes import FIX_JOIN, FIX_TEMPLATES, FixCode, with_replicas
from planner.fmt import one_line, printable
from planner.frozen import FROZEN
from planner.layout import (
    ActivationCheckpointing,
    Implementation,
    Layout,
    PipelineSchedule,
    Precision,
    Sharding,
    TrainingConfig,
)
from planner.limits import MAX_GPUS, MAX_INPUT_BYTES, read_input_text, unique_keys
from planner.model.attention_kernels import AttentionKernel
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision
from planner.model.run_loss_inputs import DEFAULT_RUN_LOSSES, RunLossInputs
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.model.structure import native_unsupported
from planner.plan_accuracy import EfficiencyCeiling, MemoryBand, Uncertainty
from planner.plan_calibration import PlanCalibration

if TYPE_CHECKING:
    from planner.catalog.hardware import Catalog, NodeTemplate

PLAN_SCHEMA_VERSION = 1
# The keys by which a plan file read is the job.json ``emit`` wrote (trainer/job_spec.py JobSpec),
# whose plan is read instead (trial s34: `explain job/job.json` printed a pydantic error).
JOB_FILE_KEYS = frozenset({"name", "plan", "run"})


class EstimateLayout(BaseModel):
    """The estimated configuration in one flat record: the resolved ``Layout`` and the
    ``TrainingConfig`` (``layout`` in the JSON of ``trainplan estimate``). Defaults as theirs."""

    model_config = FROZEN
    dp_replicate: int = 1
    dp_shard: int = -1
    tp: int = 1
    pp: int = 1
    cp: int = 1
    sharding: Sharding = Sharding.FSDP
    pp_schedule: PipelineSchedule = PipelineSchedule.ONE_F_ONE_B
    vpp: int = 1
    ep: int = 1
    expert_tp: bool = True
    micro_batch: int = 1
    grad_accum: int = 1
    seq_len: int = 2048
    activation_checkpointing: ActivationCheckpointing = ActivationCheckpointing.NONE
    ac_blocks: int = 0
    precision: Precision = Precision.BF16
    impl: Implementation = Implementation.NATIVE
    compile: bool = False
    offload: bool = False

    @classmethod
    def of(cls, layout: Layout, training: TrainingConfig) -> EstimateLayout:
        return cls(**dict(layout), **dict(training))


class ModelSummary(BaseModel):
    """What is trained (``model`` in the JSON of ``trainplan estimate``): parameters in total and
    per token (MoE: routed experts only), DeepSeek's MTP modules apart, the sliding-window layers, and
    whether trainplan's native decoder builds the family (otherwise ``impl hf`` trains the transformers modules)."""

    model_config = FROZEN
    name: str
    family: str
    params: int
    active_params: int
    mtp_params: int = 0
    native: bool
    # Sliding-window layers and their span, as ``models --json`` names them (None: no such layer;
    # plan files before them: None)
    windowed_layers: int | None = None
    window_tokens: int | None = None

    @classmethod
    def of(cls, model: ModelSpec) -> ModelSummary:
        counts = model.param_counts()
        return cls(
            name=model.name,
            family=model.family,
            params=counts.total,
            active_params=model.num_active_params(),
            mtp_params=counts.mtp,
            native=not native_unsupported(model),
            windowed_layers=model.windowed_layers,
            window_tokens=model.window_tokens,
        )


class FixHint(BaseModel):
    """One next step for an estimate that does not fit: its code and the figures it names; the
    English words are ``FIX_TEMPLATES[code]`` filled in, the app renders the code per language."""

    model_config = FROZEN
    code: FixCode
    figures: dict[str, int | float | str] = Field(default_factory=dict)

    def text(self) -> str:
        words = FIX_TEMPLATES[self.code].format(**self.figures)
        return with_replicas(words, self.figures, lambda template: template.format(**self.figures))

    @staticmethod
    def joined(hints: Sequence[FixHint]) -> str:
        """``Estimate.fix``: the hints' English words, alternatives joined ("...; or ...")."""
        return FIX_JOIN.join(hint.text() for hint in hints)


class Estimate(BaseModel):
    """One configuration's prediction; ``reason`` says why it is infeasible, ``fix`` what to try
    (``fix_hints``: the same steps typed, for the app's other languages; not written to plan files)."""

    model_config = FROZEN
    feasible: bool
    reason: str | None = None
    fix: str | None = None
    fix_hints: tuple[FixHint, ...] = Field(default=(), exclude=True)
    gpu: str
    num_gpus: int
    num_nodes: int
    memory: MemoryEstimate
    time: TimeEstimate
    throughput: ThroughputEstimate
    layout: EstimateLayout
    global_batch_tokens: int
    # What was asked for, when a global batch was (plan, estimate --global-batch-tokens); differs
    # from global_batch_tokens when no layout in reach divides it (the nearest achievable is used).
    requested_global_batch_tokens: int | None = None
    # The batch was one the search chose within the tolerance (``--vary-batch``), not the nearest
    # to the request that a layout makes (trial s38: "nearest achievable" of a reachable batch).
    batch_varied: bool = False
    # The request named no batch: the requested one is the default for the model's size
    # (``default_global_batch_tokens``), which the layout line says (buyer trial s50 M6).
    batch_defaulted: bool = False
    time_to_train_h: float | None = None
    cost_usd: float | None = None
    # the reserved term cost_usd bills whole (None: billed by the hour; plan files before it)
    term: TermBilling | None = None
    energy_kwh: float | None = None
    goodput: GoodputEstimate | None = None  # absent from plan files written before it
    model: ModelSummary | None = None  # absent from plan files written before it
    uncertainty: Uncertainty | None = None  # the error band (absent from plan files written before it)
    ceiling: EfficiencyCeiling | None = None  # None: no measured row holds this regime's efficiency
    attention_kernel: str | None = None  # the kernel timed, in words (absent from older plan files)
    attention_kernel_timed: AttentionKernel | None = None  # the same, typed (absent from older plan files)
    attention_cp_fallback: bool = False  # another kernel would run but for the stack's context parallelism
    # that kernel (None with attention_cp_fallback: cuDNN, all plan files before it could name)
    attention_cp_fallback_from: AttentionKernel | None = None
    # The stack's own SDPA dispatch timed cuDNN, its pick only from torch 2.11 on (rates.SDPA_CUDNN_NOTE
    # says it where it is rendered; review s31: the note was prose inside ``attention_kernel``).
    sdpa_picks_cudnn: bool = False
    # The stack's SDPA timed FlashAttention-2 on a GPU whose cuDNN attention it does not pick but a
    # run may force (rates.SDPA_SKIPS_CUDNN_NOTE; trial s37: B300 at 128K, 2.5x B200's attention)
    sdpa_skips_cudnn: bool = False

    @property
    def model_mfu(self) -> float | None:
        """The model's own MFU where the efficiency ceiling holds the estimate (None: not held):
        plans held at one ceiling differ there (trial s41; ``EfficiencyCeiling.own_mfu``)."""
        c = self.ceiling
        return None if c is None else c.own_mfu(self.throughput.mfu, self.throughput.tokens_per_s)

    def cost_at_hours(self, hours: float) -> float | None:
        """The cost of the same GPUs held ``hours`` (a band's end, a risk's time): ``rebilled``."""
        if self.cost_usd is None or not self.time_to_train_h:
            return None
        return float(rebilled(self.cost_usd, self.time_to_train_h, hours, self.term))

    def time_h_at(self, risk: str) -> float | None:
        """The time to train (hours) at a risk quantile ('p50', 'p80', 'p90'); None without a band."""
        u = self.uncertainty
        return None if u is None or u.time_to_train_h_at_risk is None else u.time_to_train_h_at_risk.get(risk)

    def cost_usd_at(self, risk: str) -> float | None:
        """The cost at a risk quantile; None without a band."""
        u = self.uncertainty
        return None if u is None or u.cost_usd_at_risk is None else u.cost_usd_at_risk.get(risk)

    @property
    def memory_band(self) -> MemoryBand | None:
        """The reserved peak's 80 % band; None without a band."""
        return None if self.uncertainty is None else self.uncertainty.memory

    @property
    def may_not_fit(self) -> bool:
        """Whether the reserved peak's band passes the GPU's own room (``MemoryBand.may_not_fit``)."""
        band = self.memory_band
        return band is not None and band.may_not_fit


class Plan(BaseModel):
    """A runnable plan: model, hardware, layout, training settings and the prediction."""

    model_config = FROZEN
    schema_version: int = PLAN_SCHEMA_VERSION
    model: ModelSpec
    hf_config_path: str | None = None  # set when the model came from a local config.json
    gpu: str
    num_gpus: int = Field(ge=1, le=MAX_GPUS)
    num_nodes: int = Field(ge=1, le=MAX_GPUS)
    gpus_per_node: int = Field(ge=1, le=MAX_GPUS)
    layout: Layout
    training: TrainingConfig
    training_tokens: float | None = None
    price_per_gpu_hour_usd: float | None = None
    price_basis: PriceBasis | None = None  # where that price comes from (None: plan files before it)
    # The listed offers behind that price, each with its provider, date and source (prices.offers_behind;
    # empty for an estimate, a user's price, and plan files before it).
    price_offers: tuple[PriceOffer, ...] = ()
    # The --price-kind it was priced under, kept beside a user's price: a spot plan priced with
    # --price keeps spot's interruptions when restacked or replanned (review s29b).
    price_kind: PriceKind | None = None
    # GPUs rented together (GPUSpec's): the cost bills whole units, e.g. a provider's 8-GPU node.
    rent_unit_gpus: int = Field(1, ge=1, le=MAX_GPUS)
    estimate: Estimate
    # The software the estimate describes; only trainplan plans can be emitted (emit refuses others).
    stack: Stack = Stack.TRAINPLAN
    calibration: PlanCalibration | None = None  # None: the built-in catalog (and plan files before it)
    # The attention kernel the estimate assumed; None: the one the stack picks (the trainer's SDPA
    # for trainplan).
    attention: AttentionKernel | None = None
    # DeepSpeed's partitioned activation checkpoints (Megatron-DeepSpeed plans only).
    partition_activations: bool = False
    # Megatron-Core's overlapped expert all-to-alls (--overlap-moe-expert-parallel-comm; its plans only).
    moe_a2a_overlap: bool = False
    # Megatron-Core's --tp-comm-overlap as its recipes run it (False: turned off; megatron-core plans
    # only, True elsewhere and in plan files before it).
    tp_comm_overlap: bool = True
    # The optimizer's formats beyond the stack's profile (bf16 gradient buffers, 16-bit master
    # remainders: Megatron plans only; pure bf16: trainplan, torchtitan, hf-trainer). Plan files from
    # before a format load with it off (pydantic's default for a missing key).
    optimizer_precision: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION
    # The user's own run-loss figures its goodput rests on (None each: the default; plan files
    # before it: none given).
    run_losses: RunLossInputs = DEFAULT_RUN_LOSSES
    # The catalog network the nodes were estimated on; None: the GPU's default
    # (planner/catalog/networks.py).
    network: str | None = None

    @property
    def tp_overlap_off(self) -> bool:
        """Whether the plan turns off its stack's TP overlap (``Stack.tp_overlap_off``)."""
        return Stack(self.stack).tp_overlap_off(self.tp_comm_overlap)

    @property
    def emittable(self) -> bool:
        """Whether trainplan can emit and run the plan: another stack's plan, or one assuming a
        kernel the trainer does not choose, estimates that software."""
        return self.stack == Stack.TRAINPLAN and self.attention is None

    @property
    def layout_words(self) -> str:
        """The layout as its stack names it (``Layout.describe`` with ``Stack.fsdp_word``)."""
        return self.layout.describe(self.stack.fsdp_word)

    @property
    def billed_gpus(self) -> int:
        """The GPUs the cost pays for: whole rental units (``billed_gpus``)."""
        return int(billed_gpus(self.num_gpus, self.rent_unit_gpus, self.num_nodes))

    @property
    def training_steps(self) -> int | None:
        """Optimizer steps the token budget takes at the plan's batch (the last one partial);
        None without a budget."""
        if self.training_tokens is None:
            return None
        return max(1, math.ceil(self.training_tokens / self.estimate.global_batch_tokens))

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        try:
            path.write_text(self.to_json() + "\n")
        except OSError as exc:  # a full disk's write error names no file (review s37)
            if path.is_file():  # no truncated plan left behind (a device such as /dev/full stays)
                path.unlink(missing_ok=True)
            if exc.filename:
                raise
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        return path

    def check(self, catalog: Catalog | None = None) -> None:
        """The rules the planner made the plan by, checked again (a plan file may be hand-edited):
        the schema version, a catalog GPU (and network), nodes that hold the GPUs (``fullest_node``), every
        rule of an estimate (``checked_configuration``: degrees multiply to the world size,
        structure, precision) and the optimizer formats'. ValueError naming the first broken."""
        from planner.catalog.hardware import load_catalog
        from planner.model.configuration import checked_configuration
        from planner.plan_figures import figures_problem

        if self.schema_version != PLAN_SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {self.schema_version}: this trainplan reads plan files of version {PLAN_SCHEMA_VERSION}"
            )
        catalog = catalog or load_catalog()
        gpu = catalog.gpu(self.gpu)
        if self.gpu != gpu.id:
            raise ValueError(f"gpu '{self.gpu}': the catalog id is '{gpu.id}'")
        if self.network is not None:
            catalog.network(self.network)  # an unknown (hand-edited) id: ValueError naming the known ones
        fullest = fullest_node(self.num_gpus, self.num_nodes, catalog.node(gpu.default_node), "num_nodes")
        if self.gpus_per_node != self.num_gpus // self.num_nodes:
            raise ValueError(
                f"gpus_per_node {self.gpus_per_node} is not num_gpus // num_nodes = {self.num_gpus // self.num_nodes}"
            )
        trainer_rules = self.stack.trainer_rules
        checked_configuration(
            self.model, gpu, self.layout, self.training, self.num_gpus, fullest, catalog, trainer_rules
        )
        self._check_formats()
        self._check_figures()
        if problem := figures_problem(self, gpu):
            raise ValueError(problem)

    def _check_formats(self) -> None:
        """The optimizer formats are the stack's and run on this layout (``optimizer_precision_problem``,
        ``optimizer_layout_problem``): the trainer casts the weights to bf16 on the file's word, so a
        hand-edited pure-bf16 fp32 plan is refused here (bf16pure55)."""
        from planner.stack_rules import optimizer_layout_problem, optimizer_precision_problem

        chosen = self.optimizer_precision
        if problem := optimizer_precision_problem(self.stack, chosen) or optimizer_layout_problem(
            self.layout, self.training, chosen
        ):
            raise problem

    def _check_figures(self) -> None:
        """The estimate is of this configuration (a hand-edited micro-batch left the old one's
        figures beside it), and the money and tokens are not negative."""
        # a plan may keep dp_shard -1 (the rest of the GPUs): the trainer resolves it, so does this
        t, layout = self.training, self.layout.resolve(self.num_gpus)
        batch = t.micro_batch * t.grad_accum * t.seq_len * layout.dp
        if self.estimate.global_batch_tokens != batch:
            raise ValueError(
                f"estimate.global_batch_tokens {self.estimate.global_batch_tokens:,} is not micro_batch x"
                f" grad_accum x seq_len x dp = {batch:,}: the estimate is of another configuration; re-run estimate"
            )
        for name in ("gpu", "num_gpus"):  # trial s24: a gpu edited to b200 explained the H100's figures
            if getattr(self.estimate, name) != getattr(self, name):
                raise ValueError(
                    f"estimate.{name} {getattr(self.estimate, name)} is not the plan's {getattr(self, name)}: the"
                    " estimate is of another configuration; re-run estimate"
                )
        for name in ("price_per_gpu_hour_usd", "training_tokens"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"{name} {value}: expected a number >= 0")

    @classmethod
    def load(cls, path: str | Path, catalog: Catalog | None = None, *, of_job: bool = False) -> Plan:
        """Read a plan file (``read_input``: a regular file, capped) and ``check`` it; raises
        ValueError naming the file when it is not a valid plan. ``of_job``: a job.json stands for
        the plan it holds (explain); else it is refused (review s34: emit took one silently and
        dropped its run settings)."""
        text = read_input_text(path, "plan file", MAX_INPUT_BYTES)
        job = False
        try:  # every string without terminal escapes (a model name is printed): planner/fmt.py printable
            raw = json.loads(text, object_pairs_hook=unique_keys)
            if job := isinstance(raw, dict) and raw.keys() >= JOB_FILE_KEYS:  # trial s34: emit's job.json
                raw = raw["plan"]
            report = isinstance(raw, dict) and "feasible" in raw and "schema_version" not in raw
            plan = None if report else cls.model_validate(_printable_strings(raw))
        except RecursionError:
            raise ValueError(f"{path}: nested too deeply, not a plan file") from None
        except Exception as exc:  # pydantic.ValidationError, JSON decode error, duplicate key
            raise ValueError(f"{path}: not a valid trainplan plan ({one_line(exc, verbatim=True)})") from None
        if job and not of_job:
            raise ValueError(
                f"{path}: this is a job (emit's job.json), not a plan file: run it with `trainplan run"
                f" {Path(path).parent}`, or emit again from the plan.json it was written from"
            )
        if plan is None:  # trial s25: `plan --json > file` is the first thing tried; it is the report
            raise ValueError(
                f"{path}: this is the report --json prints, not a plan file; write one with"
                " `trainplan plan ... --out FILE` (or estimate ... --out FILE)"
            )
        try:
            plan.check(catalog)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{path}: inconsistent plan ({one_line(exc)})") from None
        return plan


def _printable_strings(value: object) -> object:
    """A parsed JSON value with ``printable`` applied to every string in it (keys too)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(key): _printable_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_printable_strings(item) for item in value]
    return value


def even_node_count(num_gpus: int, gpus_per_node: int) -> int:
    """The fewest nodes of ``gpus_per_node`` that hold ``num_gpus`` in equal shares, as torchrun's
    one ``--nproc-per-node`` and emit need (trial s27: 9 GPUs on 8-GPU servers were estimated on
    2 nodes of 4 and written to a plan that emit refused): 9 -> 3 nodes of 3, 12 -> 2 of 6."""
    fewest = -(-num_gpus // gpus_per_node)
    return next(k for k in range(fewest, num_gpus + 1) if num_gpus % k == 0)


def fullest_node(num_gpus: int, num_nodes: int, node: NodeTemplate, what: str) -> int:
    """GPUs on the fullest of ``num_nodes`` nodes holding ``num_gpus``; ValueError (``what`` names
    the flag or field) when there are more nodes than GPUs, or a node would hold more GPUs than
    its template (``estimate --num-gpus 4096 --nodes 1`` on 8-GPU servers)."""
    if not 1 <= num_nodes <= num_gpus:
        raise ValueError(f"{what} {num_nodes}: {num_gpus} GPUs fill 1 to {num_gpus} nodes")
    fullest = -(-num_gpus // num_nodes)
    if fullest > node.gpus_per_node:
        raise ValueError(
            f"{what} {num_nodes}: {fullest} GPUs per node, but a {node.id} node holds {node.gpus_per_node}"
            f" (use at least {-(-num_gpus // node.gpus_per_node)} nodes)"
        )
    return fullest

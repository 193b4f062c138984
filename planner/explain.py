"""Plain-language reading of a plan's breakdowns: what dominates, what binds, what to try.

``plan_notes`` returns typed notes (a ``NoteKind`` and its named figures), so every front end
can word them in its own language; ``explain_plan`` is their English text (``NOTE_TEXT``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from planner.estimate_parts import term_words
from planner.fmt import duration_words
from planner.layout import Implementation
from planner.model.attention_kernels import AttentionKernel
from planner.model.goodput import loss_shares
from planner.model.rates import KERNEL_WORDS
from planner.model.stacks import Stack
from planner.plan import Plan
from planner.units import SECONDS_PER_MINUTE


@dataclass(frozen=True)
class WindowedLayers:
    """A plan's sliding-window layers (trial s52 M4: never said), one record for the CLI's attention
    line and the app's card: how many of the layers, the window, and what their kernel computes beyond
    it per token, counted in HFU (0: nothing), by transformers' SDPA (the whole masked square) or by
    trainplan's banded kernel (its tiles)."""

    layers: int
    total: int
    window_tokens: int
    extra_gflop_per_token: float
    by_sdpa: bool


def windowed_layers(plan: Plan) -> WindowedLayers | None:
    """The plan's ``WindowedLayers``; None where its model has no sliding-window layer."""
    m = plan.model
    if not m.sliding_layers or m.sliding_window is None:
        return None
    extra = plan.estimate.throughput.masked_window_flops_per_token / 1e9
    by_sdpa = plan.training.impl == Implementation.HF
    return WindowedLayers(m.sliding_layers, m.num_layers, m.sliding_window, extra, by_sdpa)


class NoteKind(StrEnum):
    MEMORY = "memory"  # term, value_gib, peak_gib, reserved_gib, used_fraction, usable_gib
    ACTIVATIONS_DOMINATE = "activations_dominate"
    ACTIVATIONS_AT_ONE = "activations_at_one"  # micro-batch 1 already: no smaller one to suggest
    ACTIVATIONS_HOST_BOUND = "activations_host_bound"  # the same, the step host-bound: no smaller micro-batch
    STATES_DOMINATE = "states_dominate"
    STEP_TIME = "step_time"  # term, fraction, step_s
    HOST_BOUND = "host_bound"  # trainplan's trainer without torch.compile: compile is the remedy
    HOST_BOUND_LAUNCHES = "host_bound_launches"  # another stack, or compiled already
    HOST_SERIAL = "host_serial"  # a profile timed with synchronous launches: no dispatch speed-up helps
    EXPOSED_COMM = "exposed_comm"  # fraction
    BUBBLE = "bubble"
    CP_KERNEL = "cp_kernel"  # kernel: the one that runs without cp, in words
    MFU = "mfu"  # mfu, model_gflop, hfu, hardware_gflop
    FAILURES = "failures"  # num_gpus, mttf_h, write_s, young_min, interval_min, cut (0/1), restart_min
    GOODPUT = "goodput"  # goodput, loss (a LossShares field), share, lost_h
    INFEASIBLE = "infeasible"  # reason, fix


NOTE_TEXT: dict[NoteKind, str] = {
    NoteKind.MEMORY: "memory: {term} is the largest term ({value_gib:.1f} GiB of {peak_gib:.1f} GiB allocated); "
    "reserved {reserved_gib:.1f} GiB uses {used_fraction:.0%} of the usable {usable_gib:.1f} GiB",
    NoteKind.ACTIVATIONS_DOMINATE: "activations dominate: selective or full checkpointing, a smaller micro-batch, "
    "or tp/cp would cut them",
    NoteKind.ACTIVATIONS_AT_ONE: "activations dominate: selective or full checkpointing or tp/cp would cut them",
    NoteKind.ACTIVATIONS_HOST_BOUND: "activations dominate: selective or full checkpointing or tp/cp would cut them"
    " (a smaller micro-batch too, but the host already binds the step)",
    NoteKind.STATES_DOMINATE: "states dominate: shard them further (fsdp over more ranks) to free memory",
    NoteKind.STEP_TIME: "step time: {term} is the largest part ({fraction:.0%} of {step_s:.3f} s)",
    NoteKind.HOST_BOUND: "the host cannot issue kernels fast enough: torch.compile or a larger micro-batch helps",
    NoteKind.HOST_BOUND_LAUNCHES: "the host cannot issue kernels fast enough: the stack's own compilation or "
    "CUDA graphs, or a larger micro-batch, helps",
    NoteKind.HOST_SERIAL: "the host's dispatch runs in series with the GPU, as this stack's measured runs ran it "
    "(CUDA_LAUNCH_BLOCKING=1): fewer blocks x micro-batches per rank (a larger micro-batch) shorten it",
    NoteKind.EXPOSED_COMM: "exposed communication is {fraction:.0%} of the step: fewer nodes per "
    "collective (HSDP, tp inside a node) or a larger batch per GPU hides more",
    NoteKind.BUBBLE: "the pipeline bubble is large: more micro-batches per step (accumulation) or "
    "interleaved stages (vpp) shrink it",
    NoteKind.CP_KERNEL: "attention runs FlashAttention-2 under context parallelism: this stack's cp calls the"
    " flash kernel, so {kernel}, which runs here without cp, does not (tp inside a node in place of cp keeps it)",
    NoteKind.MFU: "MFU {mfu:.1%} counts 6N + attention FLOPs ({model_gflop:.2f} GFLOP/token); "
    "HFU {hfu:.1%} counts {hardware_gflop:.2f} GFLOP/token: model FLOPs{extra}",
    NoteKind.FAILURES: "failures: the {num_gpus}-GPU job fails every {mttf_h:,.1f} h on average; a checkpoint takes "
    "{write_s:,.1f} s, so the Young/Daly interval is {interval}; "
    "each failure costs half an interval plus a restart of {restart}",
    NoteKind.GOODPUT: "goodput {goodput:.1%}: the largest loss is {loss} ({share:.1%} of the wall time); the lost time"
    " adds {lost_h:,.1f} h to time-to-train, and to the cost where it is billed by the hour",
    NoteKind.INFEASIBLE: "infeasible: {reason}; fix: {fix}",
}
# The MFU note's figures for what HFU counts beyond model FLOPs (ThroughputEstimate's
# ``*_flops_per_token`` terms), in words; trial s52: all of it was called "recompute", with
# checkpointing off (Gemma 3 on impl hf: the window's masked square and the chunked loss's head).
HFU_TERM_WORDS = {
    "recompute_gflop": "recompute",
    "masked_gflop": "SDPA's masked window square",
    "unrouted_gflop": "unrouted experts",
    "head_gflop": "the chunked loss's head recompute",
}


def hfu_extra_words(figures: dict, words: dict[str, str], unknown: str) -> str:
    """' + recompute 0.50 + ...': each HFU term beyond model FLOPs with its GFLOP/token; ``unknown``
    where a plan file written before the terms were kept counts more than the model FLOPs."""
    parts = [f" + {words[key]} {float(figures[key] or 0):.2f}" for key in HFU_TERM_WORDS if figures.get(key)]
    extra = float(figures["hardware_gflop"] or 0) - float(figures["model_gflop"] or 0)
    return "".join(parts) if parts or extra < 0.005 else unknown


# A LossShares field in words (planner/model/goodput.py).
LOSS_WORDS = {
    "straggler": "the slowest rank",
    "evaluation": "evaluation",
    "data_stall": "input stalls",
    "startup": "start-up",
    "checkpoints": "checkpoint writes",
    "failures": "failures",
    "planned_restarts": "maintenance restarts",
    "capacity_wait": "waits for spot capacity",
}


@dataclass(frozen=True)
class Note:
    """One observation about a plan: its kind and the figures its sentence needs (``term``: a
    ``MemoryTerms``/``TimeTerms`` field name)."""

    kind: NoteKind
    values: tuple[tuple[str, float | int | str | None], ...] = ()

    def figures(self) -> dict[str, float | int | str | None]:
        return dict(self.values)

    def text(self) -> str:
        figures = {k: (term_words(v) if k == "term" and isinstance(v, str) else v) for k, v in self.values}
        if self.kind is NoteKind.FAILURES:  # durations in the goodput line's words, not minutes
            young, every = (float(figures[k] or 0) * SECONDS_PER_MINUTE for k in ("young_min", "interval_min"))
            cut = f", longer than the run: one checkpoint after {duration_words(every)}" if figures.get("cut") else ""
            figures["interval"] = duration_words(young) + cut
            figures["restart"] = duration_words(float(figures["restart_min"] or 0) * SECONDS_PER_MINUTE)
        if self.kind is NoteKind.GOODPUT:
            figures["loss"] = LOSS_WORDS[str(figures["loss"])]
        if self.kind is NoteKind.MFU:
            figures["extra"] = hfu_extra_words(figures, HFU_TERM_WORDS, " + terms this plan file does not name")
        return NOTE_TEXT[self.kind].format(**figures)


def _note(kind: NoteKind, **values: float | int | str | None) -> Note:
    return Note(kind, tuple(values.items()))


def largest(terms: Iterable[tuple[str, float]]) -> tuple[str, float]:
    """The first largest ``(term, value)`` of a breakdown (``MemoryTerms``/``TimeTerms`` iterate so)."""
    return max(terms, key=lambda term: term[1])


# Below this share of the usable memory a plan has room to spare: the notes name its largest term
# but give no advice to cut it (trial s33: "activations dominate: ... would cut them" at 1 %).
TIGHT_MEMORY_FRACTION = 0.8


def memory_notes(p: Plan) -> list[Note]:
    m = p.estimate.memory
    terms = m.breakdown_gib
    name, value = largest(terms)
    usable = m.usable_gib
    notes = [
        _note(
            NoteKind.MEMORY,
            term=name,
            value_gib=value,
            peak_gib=m.peak_gib,
            reserved_gib=m.reserved_gib,
            used_fraction=m.reserved_gib / usable,
            usable_gib=usable,
        )
    ]
    if p.estimate.feasible and m.reserved_gib < TIGHT_MEMORY_FRACTION * usable:
        return notes
    if value == terms.activations and p.training.activation_checkpointing.value == "none":
        # A host-bound step wants a larger micro-batch: the memory advice then leaves it out, as it
        # does at micro-batch 1 (trial s28b: it suggested a smaller one).
        if p.training.micro_batch == 1:
            notes.append(_note(NoteKind.ACTIVATIONS_AT_ONE))
        else:
            notes.append(_note(NoteKind.ACTIVATIONS_HOST_BOUND if host_bound(p) else NoteKind.ACTIVATIONS_DOMINATE))
    if value in (terms.optimizer, terms.params, terms.grads) and p.layout.shard_group < p.layout.dp * p.layout.cp:
        notes.append(_note(NoteKind.STATES_DOMINATE))
    return notes


def host_bound(p: Plan) -> bool:
    """Whether the GPU waits for the host's kernel launches for over a tenth of the step."""
    return p.estimate.time.breakdown_s.host_stall > 0.1 * p.estimate.time.step_s


def time_notes(p: Plan) -> list[Note]:
    t = p.estimate.time
    total = t.step_s
    terms = t.breakdown_s
    name, value = largest((term, v) for term, v in terms if v > 0)
    notes = [_note(NoteKind.STEP_TIME, term=name, fraction=value / total, step_s=total)]
    if host_bound(p):
        # torch.compile is the remedy only where it is trainplan's own option and still off.
        compilable = p.stack == Stack.TRAINPLAN and not p.training.compile
        launches = NoteKind.HOST_SERIAL if p.stack.serialises_host else NoteKind.HOST_BOUND_LAUNCHES
        notes.append(_note(NoteKind.HOST_BOUND if compilable else launches))
    comm = terms.exposed_comm
    if comm > 0.15 * total:
        notes.append(_note(NoteKind.EXPOSED_COMM, fraction=comm / total))
    if terms.bubble > 0.1 * total:
        notes.append(_note(NoteKind.BUBBLE))
    if p.estimate.attention_cp_fallback:  # trial s37: the long-context lever, unexplained
        kernel = KERNEL_WORDS[p.estimate.attention_cp_fallback_from or AttentionKernel.CUDNN]
        notes.append(_note(NoteKind.CP_KERNEL, kernel=kernel))
    return notes


def throughput_notes(p: Plan) -> list[Note]:
    th = p.estimate.throughput
    return [
        _note(
            NoteKind.MFU,
            mfu=th.mfu,
            model_gflop=th.model_flops_per_token / 1e9,
            hfu=th.hfu,
            hardware_gflop=th.hardware_flops_per_token / 1e9,
            recompute_gflop=th.recompute_flops_per_token / 1e9,
            masked_gflop=th.masked_window_flops_per_token / 1e9,
            unrouted_gflop=th.unrouted_expert_flops_per_token / 1e9,
            head_gflop=th.head_recompute_flops_per_token / 1e9,
        )
    ]


def goodput_notes(p: Plan) -> list[Note]:
    """The failures and checkpoints, then what the goodput loses most to (trial s33: a 2 % goodput
    that start-up made was said under the failures, of which none was expected)."""
    g, e = p.estimate.goodput, p.estimate
    if g is None or g.mttf_h is None or g.checkpoint_interval_min is None:
        return []
    notes = [
        _note(
            NoteKind.FAILURES,
            num_gpus=p.num_gpus,
            mttf_h=g.mttf_h,
            write_s=g.checkpoint_write_s,
            # an older plan file has no Young/Daly figure of its own: its interval stands for it
            young_min=g.young_daly_min if g.young_daly_min is not None else g.checkpoint_interval_min,
            interval_min=g.checkpoint_interval_min,
            cut=int(g.interval_cut_to_run),
            restart_min=g.restart_s / 60,
        )
    ]
    if e.time_to_train_h is None:
        return notes
    loss, share = loss_shares(g, e.time_to_train_h * g.goodput_fraction, e.time_to_train_h).largest()
    lost_h = e.time_to_train_h * (1 - g.goodput_fraction)
    return [*notes, _note(NoteKind.GOODPUT, goodput=g.goodput_fraction, loss=loss, share=share, lost_h=lost_h)]


def plan_notes(p: Plan) -> list[Note]:
    """What dominates memory and time, the utilisation, failures; an infeasible plan's reason first."""
    notes = memory_notes(p) + time_notes(p) + throughput_notes(p) + goodput_notes(p)
    if not p.estimate.feasible:
        notes.insert(0, _note(NoteKind.INFEASIBLE, reason=p.estimate.reason, fix=p.estimate.fix))
    return notes


def explain_plan(p: Plan) -> list[str]:
    return [note.text() for note in plan_notes(p)]

"""Plain-language reading of a plan's breakdowns: what dominates, what binds, what to try."""

from __future__ import annotations

from collections.abc import Iterable

from planner.plan import Plan


def largest(terms: Iterable[tuple[str, float]]) -> tuple[str, float]:
    """The first largest ``(term, value)`` of a breakdown (``MemoryTerms``/``TimeTerms`` iterate so)."""
    name, value = max(terms, key=lambda term: term[1])
    return name.replace("_", " "), value


def memory_notes(p: Plan) -> list[str]:
    m = p.estimate.memory
    terms = m.breakdown_gib
    name, value = largest(terms)
    usable = m.capacity_gib * (1 - m.headroom_fraction)
    notes = [
        f"memory: {name} is the largest term ({value:.1f} GiB of {m.peak_gib:.1f} GiB allocated); "
        f"reserved {m.reserved_gib:.1f} GiB uses {m.reserved_gib / usable:.0%} of the usable "
        f"{usable:.1f} GiB"
    ]
    if value == terms.activations and p.training.activation_checkpointing.value == "none":
        notes.append(
            "activations dominate: selective or full checkpointing, a smaller micro-batch, or tp/cp would cut them"
        )
    if value in (terms.optimizer, terms.params, terms.grads) and p.layout.shard_degree < p.layout.dp * p.layout.cp:
        notes.append("states dominate: shard them further (fsdp over more ranks) to free memory")
    return notes


def time_notes(p: Plan) -> list[str]:
    t = p.estimate.time
    total = t.step_s
    terms = t.breakdown_s
    name, value = largest((term, v) for term, v in terms if v > 0)
    notes = [f"step time: {name} is the largest part ({value / total:.0%} of {total:.3f} s)"]
    if terms.host_stall > 0.1 * total:
        notes.append("the host cannot issue kernels fast enough: torch.compile or a larger micro-batch helps")
    comm = terms.exposed_comm
    if comm > 0.15 * total:
        notes.append(
            f"exposed communication is {comm / total:.0%} of the step: fewer nodes per "
            "collective (HSDP, tp inside a node) or a larger batch per GPU hides more"
        )
    if terms.bubble > 0.1 * total:
        notes.append(
            "the pipeline bubble is large: more micro-batches per step (accumulation) or "
            "interleaved stages (vpp) shrink it"
        )
    return notes


def throughput_notes(p: Plan) -> list[str]:
    th = p.estimate.throughput
    return [
        f"MFU {th.mfu:.1%} counts 6N + attention FLOPs ({th.model_flops_per_token / 1e9:.2f} GFLOP/token); "
        f"HFU {th.hfu:.1%} adds recompute ({th.hardware_flops_per_token / 1e9:.2f} GFLOP/token)"
    ]


def goodput_notes(p: Plan) -> list[str]:
    g, e = p.estimate.goodput, p.estimate
    if g is None or g.mttf_h is None or g.checkpoint_interval_min is None:
        return []
    lost = ""
    if e.time_to_train_h is not None:
        lost = f"; the lost time adds {e.time_to_train_h * (1 - g.goodput_fraction):,.1f} h to time-to-train and cost"
    return [
        f"failures: a {p.num_gpus}-GPU job fails every {g.mttf_h:,.1f} h on average; a checkpoint takes "
        f"{g.checkpoint_write_s:,.1f} s, so the Young/Daly interval is {g.checkpoint_interval_min:,.1f} min; "
        f"each failure costs half an interval plus a {g.restart_s / 60:,.1f}-min restart: goodput "
        f"{g.goodput_fraction:.1%}{lost}"
    ]


def explain_plan(p: Plan) -> list[str]:
    notes = memory_notes(p) + time_notes(p) + throughput_notes(p) + goodput_notes(p)
    if not p.estimate.feasible:
        notes.insert(0, f"infeasible: {p.estimate.reason}; fix: {p.estimate.fix}")
    return notes

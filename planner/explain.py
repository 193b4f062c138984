"""Plain-language reading of a plan's breakdowns: what dominates, what binds, what to try."""

from __future__ import annotations

from planner.plan import Plan


def largest(values: dict[str, float]) -> tuple[str, float]:
    name = max(values, key=lambda key: values[key])
    return name.replace("_", " "), values[name]


def memory_notes(p: Plan) -> list[str]:
    m = p.estimate.memory
    name, value = largest(m.breakdown_gib)
    usable = m.capacity_gib * (1 - m.headroom_fraction)
    notes = [
        f"memory: {name} is the largest term ({value:.1f} GiB of {m.peak_gib:.1f} GiB allocated); "
        f"reserved {m.reserved_gib:.1f} GiB uses {m.reserved_gib / usable:.0%} of the usable "
        f"{usable:.1f} GiB"
    ]
    if name == "activations" and p.training.activation_checkpointing.value == "none":
        notes.append(
            "activations dominate: selective or full checkpointing, a smaller micro-batch, or tp/cp would cut them"
        )
    if name in ("optimizer", "params", "grads") and p.layout.shard_degree < p.layout.dp * p.layout.cp:
        notes.append("states dominate: shard them further (fsdp over more ranks) to free memory")
    return notes


def time_notes(p: Plan) -> list[str]:
    t = p.estimate.time
    total = t.step_s
    parts = {k: v for k, v in t.breakdown_s.items() if v > 0}
    name, value = largest(parts)
    notes = [f"step time: {name} is the largest part ({value / total:.0%} of {total:.3f} s)"]
    if t.breakdown_s.get("host_stall", 0) > 0.1 * total:
        notes.append("the host cannot issue kernels fast enough: torch.compile or a larger micro-batch helps")
    comm = sum(t.breakdown_s.get(k, 0) for k in ("dp_comm", "tp_comm", "pp_comm", "cp_comm"))
    if comm > 0.15 * total:
        notes.append(
            f"exposed communication is {comm / total:.0%} of the step: fewer nodes per "
            "collective (HSDP, tp inside a node) or a larger batch per GPU hides more"
        )
    if t.breakdown_s.get("bubble", 0) > 0.1 * total:
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


def explain_plan(p: Plan) -> list[str]:
    notes = memory_notes(p) + time_notes(p) + throughput_notes(p)
    if not p.estimate.feasible:
        notes.insert(0, f"infeasible: {p.estimate.reason}; fix: {p.estimate.fix}")
    return notes

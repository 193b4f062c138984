"""Labels for what the planner answers (ui/messages.py), in English and Chinese: infeasibility,
the near tie, why-not answers and the plan notes (one key per ``planner.explain.NoteKind``).

Same shape as ``ui.i18n``'s table (key -> (English, 中文)), merged into it; placeholders are the
typed fields' names (``InfeasiblePlan.required``/``available``, ``Note.values``).
"""

from __future__ import annotations

MESSAGE_LABELS: dict[str, tuple[str, str]] = {
    "infeasible": (
        "No plan satisfies every constraint. Binding constraint: {constraint}. {body}",
        "没有满足全部约束的方案。起作用的约束：{constraint}。{body}",
    ),
    "why_deadline": (
        "The fastest plan needs {need}, the deadline is {have} (GPU limit: {limit}). "
        "Fix: allow {fix}, or raise the GPU limit.",
        "最快的方案需要 {need}，期限为 {have}（GPU 上限：{limit}）。解决办法：将期限放宽到 {fix}，或提高 GPU 上限。",
    ),
    "why_budget": (
        "The cheapest plan costs {need}, the budget is {have} (GPU limit: {limit}). Fix: raise the budget to {fix_usd}.",
        "最便宜的方案需要 {need}，预算为 {have}（GPU 上限：{limit}）。解决办法：将预算提高到 {fix_usd}。",
    ),
    "why_memory": (
        "The smallest layout needs {need:,.1f} GiB per GPU, the largest allowed GPU has {have:,.1f} GiB "
        "(GPU limit: {limit}). Fix: shard over more GPUs, use a smaller micro-batch or checkpoint activations.",
        "最小的布局每 GPU 需要 {need:,.1f} GiB，允许的最大 GPU 只有 {have:,.1f} GiB（GPU 上限：{limit}）。"
        "解决办法：在更多 GPU 上分片、减小微批或使用激活重计算。",
    ),
    "why_inventory": (
        "The smallest plan that fits needs {need:,.0f} GPUs, the limit allows {have:,.0f} ({limit}). "
        "Fix: raise that limit to {need:,.0f} or allow a GPU type with more memory.",
        "能放下的最小方案需要 {need:,.0f} 块 GPU，上限只允许 {have:,.0f} 块（{limit}）。"
        "解决办法：将该上限提高到 {need:,.0f}，或允许显存更大的 GPU 型号。",
    ),
    "why_divisibility": (
        "No candidate that fits in memory has a valid layout (heads divisible by tp, layers by pp, degrees "
        "multiplying to the GPU count; GPU limit: {limit}). Fix: allow other GPU counts or GPU types.",
        "能放下的候选方案都没有合法布局（头数须被 tp 整除、层数须被 pp 整除、各并行度之积等于 GPU 数；"
        "GPU 上限：{limit}）。解决办法：允许其他 GPU 数量或型号。",
    ),
    "why_batch": (
        "No valid layout reaches the global batch within tolerance (GPU limit: {limit}). "
        "Fix: pick another global batch (auto) or sequence length.",
        "没有合法布局能在容差内达到全局批大小（GPU 上限：{limit}）。解决办法：选择其他全局批大小（自动）或序列长度。",
    ),
    "no_gpu_limit": ("none", "无"),
    "near_tie_cost": (
        "Near tie: for +{extra:.1f} % cost, {gain:.1f} × faster — {gpus} in {time} for {cost}.",
        "接近的方案：费用多 {extra:.1f} %，速度快 {gain:.1f} 倍 —— {gpus}，{time}，{cost}。",
    ),
    "near_tie_time": (
        "Near tie: for +{extra:.1f} % time, {gain:.1f} × cheaper — {gpus} in {time} for {cost}.",
        "接近的方案：时间多 {extra:.1f} %，费用省 {gain:.1f} 倍 —— {gpus}，{time}，{cost}。",
    ),
    "knee": ("knee of the front", "前沿拐点"),
    "deadline_line": ("deadline {days:,.1f} days", "期限 {days:,.1f} 天"),
    "budget_line": ("budget {usd}", "预算 {usd}"),
    "why_not_gpu_infeasible": ("{gpu} is infeasible: {why}", "{gpu} 不可行：{why}"),
    "why_not_none_feasible": ("No GPU type is feasible: {why}", "没有可行的 GPU 型号：{why}"),
    "why_not_chosen": ("{gpu} is the chosen GPU type.", "{gpu} 就是选定的 GPU 型号。"),
    "why_not_compare": (
        "{gpu}: its best plan is {mine}; the chosen plan is {winner}.",
        "{gpu}：它的最佳方案为 {mine}；选定的方案为 {winner}。",
    ),
    "plan_phrase": (
        "{gpus} ({layout}) for {cost} in {time}, MFU {mfu:.0%}",
        "{gpus}（{layout}），费用 {cost}，用时 {time}，MFU {mfu:.0%}",
    ),
    # plan notes (planner.explain.NoteKind), with the planner's figures
    "note_memory": (
        "memory: {term} is the largest term ({value_gib:.1f} GiB of {peak_gib:.1f} GiB allocated); reserved "
        "{reserved_gib:.1f} GiB uses {used_fraction:.0%} of the usable {usable_gib:.1f} GiB",
        "显存：{term} 是最大的一项（已分配 {peak_gib:.1f} GiB 中占 {value_gib:.1f} GiB）；保留的 {reserved_gib:.1f} GiB "
        "占可用 {usable_gib:.1f} GiB 的 {used_fraction:.0%}",
    ),
    "note_activations_dominate": (
        "activations dominate: selective or full checkpointing, a smaller micro-batch, or tp/cp would cut them",
        "激活占主导：选择性或完全激活重计算、更小的微批或 tp/cp 都能减少它",
    ),
    "note_states_dominate": (
        "states dominate: shard them further (fsdp over more ranks) to free memory",
        "模型状态占主导：进一步分片（在更多 rank 上使用 fsdp）可释放显存",
    ),
    "note_step_time": (
        "step time: {term} is the largest part ({fraction:.0%} of {step_s:.3f} s)",
        "单步时间：{term} 是最大的部分（占 {step_s:.3f} 秒的 {fraction:.0%}）",
    ),
    "note_host_bound": (
        "the host cannot issue kernels fast enough: torch.compile or a larger micro-batch helps",
        "主机下发算子的速度不够：torch.compile 或更大的微批会有帮助",
    ),
    "note_exposed_comm": (
        "exposed communication is {fraction:.0%} of the step: fewer nodes per collective (HSDP, tp inside a node) "
        "or a larger batch per GPU hides more",
        "未被掩盖的通信占单步的 {fraction:.0%}：减少每个集合通信涉及的节点（HSDP、节点内 tp）或增大每 GPU 的批量可掩盖更多",
    ),
    "note_bubble": (
        "the pipeline bubble is large: more micro-batches per step (accumulation) or interleaved stages (vpp) shrink it",
        "流水线气泡较大：每步更多的微批（梯度累积）或交错流水线（vpp）可以缩小它",
    ),
    "note_mfu": (
        "MFU {mfu:.1%} counts 6N + attention FLOPs ({model_gflop:.2f} GFLOP/token); HFU {hfu:.1%} adds recompute "
        "({hardware_gflop:.2f} GFLOP/token)",
        "MFU {mfu:.1%} 按 6N + 注意力 FLOPs 计算（每 token {model_gflop:.2f} GFLOP）；HFU {hfu:.1%} 计入重计算"
        "（每 token {hardware_gflop:.2f} GFLOP）",
    ),
    "note_failures": (
        "failures: a {num_gpus}-GPU job fails every {mttf_h:,.1f} h on average; a checkpoint takes {write_s:,.1f} s, "
        "so the Young/Daly interval is {interval_min:,.1f} min; each failure costs half an interval plus a "
        "{restart_min:,.1f}-min restart: goodput {goodput:.1%}",
        "故障：{num_gpus} 块 GPU 的任务平均每 {mttf_h:,.1f} 小时故障一次；一次检查点需 {write_s:,.1f} 秒，"
        "因此 Young/Daly 间隔为 {interval_min:,.1f} 分钟；每次故障损失半个间隔加 {restart_min:,.1f} 分钟重启："
        "有效训练时间占比 {goodput:.1%}",
    ),
    "note_lost": (
        "; the lost time adds {lost_h:,.1f} h to time-to-train and cost",
        "；损失的时间使训练时间和费用增加 {lost_h:,.1f} 小时",
    ),
    "note_infeasible": ("infeasible: {reason}; fix: {fix}", "不可行：{reason}；解决办法：{fix}"),
}

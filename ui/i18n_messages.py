"""Labels for what the planner answers (ui/messages.py, ui/infeasible_words.py), in English and
Chinese: infeasibility, the near tie, why-not answers and the plan notes (one key per
``planner.explain.NoteKind``).

Same shape as ``ui.i18n``'s table (key -> (English, 中文)), merged into it; placeholders are the
typed fields' names (``InfeasiblePlan.required``/``available``, ``Note.values``).
"""

from __future__ import annotations

from planner.api.batch_notices import BATCH_BEYOND_PUBLISHED_WORDS
from planner.fix_codes import FIX_DP_SHARD, FIX_REPLICAS

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
    "why_shared_inventory": (
        "The jobs due first need at least {need:,.0f} GPU-days, the inventory offers {have:,.0f} GPU-days by "
        "their deadline (GPU limit: {limit}). Fix: add GPUs, lengthen the deadlines or the horizon, or drop a job.",
        "最先到期的任务至少需要 {need:,.0f} GPU·天，到期前库存只能提供 {have:,.0f} GPU·天（GPU 上限：{limit}）。"
        "解决办法：增加 GPU、放宽期限或时间范围，或去掉一个任务。",
    ),
    "why_shared_pack": (
        "The jobs' GPU-days fit the inventory, but no schedule of them was found: each job holds its GPUs while "
        "it runs (GPU limit: {limit}). Fix: add GPUs, lengthen the deadlines or the horizon, or drop a job.",
        "各任务所需的 GPU·天不超过库存，但找不到可行的排程：每个任务运行期间独占其 GPU（GPU 上限：{limit}）。"
        "解决办法：增加 GPU、放宽期限或时间范围，或去掉一个任务。",
    ),
    "job_answer": ("Job {job}: {text}", "任务 {job}：{text}"),
    # planner/api/notices.py tie_rule: why a listed plan beats the chosen one on the objective
    "tie_rule_cost": (
        "Plans within {fraction:.0%} of the best {risk} cost ({best}, #{rank}) count as tied, and the faster of them is"
        " chosen.",
        "{risk} 费用在最低值（{best}，第 {rank} 个）{fraction:.0%} 以内的方案视为并列，其中选择更快的方案。",
    ),
    "tie_rule_time": (
        "Plans within {fraction:.0%} of the best {risk} time ({best}, #{rank}) count as tied, and the cheaper of them is"
        " chosen.",
        "{risk} 时间在最短值（{best}，第 {rank} 个）{fraction:.0%} 以内的方案视为并列，其中选择更便宜的方案。",
    ),
    "why_deadline_batch_caps": (  # the global batch caps the GPU count: a higher limit does not help
        "The fastest plan needs {need}, the deadline is {have} (GPU limit: {limit}); the global batch caps the "
        "GPU count. Fix: allow {fix}.",
        "最快的方案需要 {need}，期限为 {have}（GPU 上限：{limit}）；全局批大小限制了 GPU 数量。"
        "解决办法：将期限放宽到 {fix}。",
    ),
    "why_deadline_no_gpus": (
        "The fastest plan needs {need}, the deadline is {have} (GPU limit: {limit}); no GPU count the planner "
        "checked beyond that limit meets it at this global batch. Fix: allow {fix}.",
        "最快的方案需要 {need}，期限为 {have}（GPU 上限：{limit}）；在此全局批大小下，规划器检查过的更大 GPU 数量"
        "也都无法满足。解决办法：将期限放宽到 {fix}。",
    ),
    # buyer trial s48 L1: the fix named a deadline past what the inputs take (a century)
    "why_deadline_past_limit": (
        "The fastest plan needs {need}, the deadline is {have} (GPU limit: {limit}); no deadline up to the limit of"
        " {max} fits. Fix: train fewer tokens.",
        "最快的方案需要 {need}，期限为 {have}（GPU 上限：{limit}）；在 {max} 的上限内没有能满足的期限。"
        "解决办法：减少训练 token 数。",
    ),
    "why_budget_past_limit": (
        "The cheapest plan costs {need} at {risk}, the quantile plans are judged at, the budget is {have} (GPU limit:"
        " {limit}); no budget up to the limit of {max} fits. Fix: train fewer tokens.",
        "最便宜的方案按 {risk}（方案评判所用的分位数）计需要 {need}，预算为 {have}（GPU 上限：{limit}）；"
        "在 {max} 的上限内没有能满足的预算。解决办法：减少训练 token 数。",
    ),
    # planner/count_probe.py deadline_fix: the fewest GPUs past the limit that meet the deadline (trial s48 M7)
    "why_deadline_more_gpus": (
        "The fastest plan needs {need}, the deadline is {have} (GPU limit: {limit}). Fix: allow {fix}, or "
        "{gpus:,} × {gpu}, more than the limit allows, which finish in {time} at {risk}{batch}.{over}",
        "最快的方案需要 {need}，期限为 {have}（GPU 上限：{limit}）。解决办法：将期限放宽到 {fix}，或使用超出上限的 "
        "{gpus:,} × {gpu}，按 {risk} 计 {time} 完成{batch}。{over}",
    ),
    "more_gpus_batch": (  # CountPastInventory.batch_tokens: the count's batch is not the one asked for (trial s38)
        ", at a global batch of {batch:,} tokens ({change:+.1%})",
        "（全局批大小 {batch:,} 个 token，{change:+.1%}）",
    ),
    "more_gpus_over_budget": (  # count_probe.over_budget_words (trial s43)
        " At that count it costs {cost} at {risk}, over the {budget} budget.",
        "该数量下按 {risk} 计费用为 {cost}，超出 {budget} 的预算。",
    ),
    "why_deadline_larger_batch": (  # InfeasiblePlan.larger_batch (app53 M1)
        "Or, at {factor:g}× the batch (“{batch_label}” = {batch}), raise “{cap_label}” to {gpus:,}: {gpus:,} × {gpu}"
        " finish in {time} at {risk} (a larger batch changes the training).",
        "或者将批大小增至 {factor:g} 倍（“{batch_label}” = {batch}），并将“{cap_label}”调高到 {gpus:,}：{gpus:,} × {gpu}"
        " 按 {risk} 计 {time} 完成（更大的批大小会改变训练本身）。",
    ),
    "why_deadline_batch": (
        "Or a larger global batch, at least {batch:,} tokens per step (a sequence for each data-parallel rank),"
        " lets the GPUs meet it in {time} at {risk} (it changes the training).",
        "或者采用更大的全局批大小（每步至少 {batch:,} 个 token，每个数据并行 rank 一条序列），这些 GPU 即可在 {time}（{risk}）"
        "内满足期限（这会改变训练本身）。",
    ),
    "why_budget_named": (
        "The cheapest plan, {gpus:,} × {gpu} for {time}, costs {need} at {risk}, the quantile plans are judged at;"
        " the budget is {have} (GPU limit: {limit}). Fix: raise the budget to {fix_usd}.",
        "最便宜的方案为 {gpus:,} × {gpu}，需时 {time}，按 {risk}（方案评判所用的分位数）计费用 {need}；预算为 {have}"
        "（GPU 上限：{limit}）。解决办法：将预算提高到 {fix_usd}。",
    ),
    # trial s35 (app): under a deadline the cheapest plan was called "the cheapest plan", and a slower,
    # cheaper one was not offered (the CLI's "or extend the deadline to N days")
    "why_budget_named_deadline": (
        "The cheapest plan that meets the deadline of {deadline}, {gpus:,} × {gpu} for {time}, costs {need} at {risk},"
        " the quantile plans are judged at; the budget is {have} (GPU limit: {limit}). Fix: raise the budget to"
        " {fix_usd}.",
        "满足期限（{deadline}）的最便宜方案为 {gpus:,} × {gpu}，需时 {time}，按 {risk}（方案评判所用的分位数）计费用"
        " {need}；预算为 {have}（GPU 上限：{limit}）。解决办法：将预算提高到 {fix_usd}。",
    ),
    "why_budget_rent": (
        "In a portfolio a budget bounds the cost the table shows for each job: its rent on a rented type,"
        " its cost at the owned rate on GPUs held.",
        "在组合规划中，预算约束的是表中所示每个任务的费用：租用类型按租金计，自有 GPU 按自有费率计。",
    ),
    "why_budget_slower": (
        "Or allow {time}: a slower plan stays within the budget.",
        "或者把期限放宽到 {time}：更慢的方案不超出预算。",
    ),
    # planner/api/budget_fix.py with_tokens_fix's clause (buyer trial s50 M7: the fix was only "raise the budget")
    "why_budget_tokens": (
        "Or train about {tokens} tokens within it, at the cheapest plan's cost per token.",
        "或者在此预算内训练约 {tokens} 个 token（按最便宜方案的每 token 成本计）。",
    ),
    "why_budget": (  # at the search's risk quantile (trial s33 app: "$16.5k" beside the card's $14,882, unsaid)
        "The cheapest plan costs {need} at {risk}, the quantile plans are judged at, the budget is {have} "
        "(GPU limit: {limit}). Fix: raise the budget to {fix_usd}.",
        "最便宜的方案按 {risk}（方案评判所用的分位数）计需要 {need}，预算为 {have}（GPU 上限：{limit}）。"
        "解决办法：将预算提高到 {fix_usd}。",
    ),
    "why_memory_no_cp": (  # trial s34: a stack without context parallelism at a long sequence
        "{stack} has no context parallelism to split the sequence; {stacks} have it (the stack selector).",
        "{stack} 没有上下文并行，无法切分序列；{stacks} 支持（见训练软件栈选项）。",
    ),
    "why_memory_no_gpus": (  # planner/count_probe.py memory_fix: no count up to its probe fits
        "The smallest layout needs {need:,.1f} GiB per GPU, the largest allowed GPU has {have:,.1f} GiB "
        "(GPU limit: {limit}); no GPU count the planner checked fits at this global batch. Fix: a GPU type "
        "with more memory, or another global batch or sequence length.",
        "最小的布局每 GPU 需要 {need:,.1f} GiB，允许的最大 GPU 只有 {have:,.1f} GiB（GPU 上限：{limit}）；"
        "在此全局批大小下，规划器检查过的任何 GPU 数量都放不下。解决办法：换用显存更大的 GPU，或改变全局批大小或序列长度。",
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
        "Near tie (at {risk}): for +{extra:.1f}% cost, {gain:.1f} × faster — {gpus} in {time} for {cost}.",
        "接近的方案（按 {risk}）：费用多 {extra:.1f}%，速度快 {gain:.1f} 倍 —— {gpus}，{time}，{cost}。",
    ),
    "near_tie_time": (
        "Near tie (at {risk}): for +{extra:.1f}% time, {gain:.1f} × cheaper — {gpus} in {time} for {cost}.",
        "接近的方案（按 {risk}）：时间多 {extra:.1f}%，费用省 {gain:.1f} 倍 —— {gpus}，{time}，{cost}。",
    ),
    "over_budget": (
        "A little over the budget (at {risk}): {speedup:.1f} × faster than the fastest plan within it, for {over:.1f}%"
        " over the budget — {gpus} in {time} for {cost}.",
        "略超预算（按 {risk}）：比预算内最快的方案快 {speedup:.1f} 倍，超出预算 {over:.1f}% —— {gpus}，{time}，{cost}。",
    ),
    "over_budget_further": (
        "Further over it: {speedup:.1f} × faster than the fastest plan within it, for {over:.1f}% over the budget —"
        " {gpus} in {time} for {cost}.",
        "再多超一些：比预算内最快的方案快 {speedup:.1f} 倍，超出预算 {over:.1f}% —— {gpus}，{time}，{cost}。",
    ),
    "point_estimate": ("the model's estimate", "模型估计"),
    "knee": ("knee of the front", "前沿拐点"),
    "deadline_line": ("deadline {deadline}", "期限 {deadline}"),
    "budget_line": ("budget {usd}", "预算 {usd}"),
    "why_not_gpu_infeasible": ("{gpu} is infeasible: {why}", "{gpu} 不可行：{why}"),
    "why_not_none_feasible": ("No GPU type is feasible: {why}", "没有可行的 GPU 型号：{why}"),
    "why_not_chosen": ("{gpu} is the chosen GPU type.", "{gpu} 就是选定的 GPU 型号。"),
    "why_not_compare": (
        "{gpu}: its best plan is {mine}; the chosen plan is {winner}.",
        "{gpu}：它的最佳方案为 {mine}；选定的方案为 {winner}。",
    ),
    "plan_phrase": (
        "{gpus} ({layout}) for {cost} in {time}, MFU {mfu:.1%}",
        "{gpus}（{layout}），费用 {cost}，用时 {time}，MFU {mfu:.1%}",
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
    "note_activations_at_one": (
        "activations dominate: selective or full checkpointing or tp/cp would cut them",
        "激活占主导：选择性或完全激活重计算或 tp/cp 都能减少它",
    ),
    "note_activations_host_bound": (
        "activations dominate: selective or full checkpointing or tp/cp would cut them (a smaller micro-batch too, "
        "but the host already binds the step)",
        "激活占主导：选择性或完全激活重计算或 tp/cp 都能减少它（更小的微批也可以，但主机已限制单步速度）",
    ),
    "note_states_dominate": (
        "states dominate: shard them further (fsdp over more ranks) to free memory",
        "模型状态占主导：进一步分片（在更多 rank 上使用 fsdp）可释放显存",
    ),
    "note_cp_kernel": (
        "attention runs FlashAttention-2 under context parallelism: this stack's cp calls the flash kernel, so"
        " {kernel}, which runs here without cp, does not (tp inside a node in place of cp keeps it)",
        "上下文并行下注意力以 FlashAttention-2 运行：此软件栈的上下文并行调用 flash 内核，因此不开 cp 时在此运行的"
        " {kernel} 不会运行（在节点内以 tp 代替 cp 可保留它）",
    ),
    "note_step_time": (
        "step time: {term} is the largest part ({fraction:.0%} of {step_s:.3f} s)",
        "单步时间：{term} 是最大的部分（占 {step_s:.3f} 秒的 {fraction:.0%}）",
    ),
    "note_host_bound": (
        "the host cannot issue kernels fast enough: torch.compile or a larger micro-batch helps",
        "主机下发算子的速度不够：torch.compile 或更大的微批会有帮助",
    ),
    "note_host_bound_launches": (
        "the host cannot issue kernels fast enough: the stack's own compilation or CUDA graphs, or a larger "
        "micro-batch, helps",
        "主机下发算子的速度不够：该框架自身的编译或 CUDA graphs，或更大的微批，会有帮助",
    ),
    "note_host_serial": (
        "the host's dispatch runs in series with the GPU, as this stack's measured runs ran it (CUDA_LAUNCH_BLOCKING=1):"
        " fewer blocks x micro-batches per rank (a larger micro-batch) shorten it",
        "主机下发与 GPU 串行执行，与该框架实测运行时一样（CUDA_LAUNCH_BLOCKING=1）：每个 rank 上更少的块 × 微批（更大的微批）可以缩短它",
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
        "MFU {mfu:.1%} counts 6N + attention FLOPs ({model_gflop:.2f} GFLOP/token); HFU {hfu:.1%} counts "
        "{hardware_gflop:.2f} GFLOP/token: model FLOPs{extra}",
        "MFU {mfu:.1%} 按 6N + 注意力 FLOPs 计算（每 token {model_gflop:.2f} GFLOP）；HFU {hfu:.1%} 按每 token "
        "{hardware_gflop:.2f} GFLOP 计算：模型 FLOPs{extra}",
    ),
    # The HFU terms beyond model FLOPs (planner/explain.py HFU_TERM_WORDS).
    "hfu_recompute_gflop": ("recompute", "重计算"),
    "hfu_masked_gflop": ("SDPA's masked window square", "SDPA 计算的整个窗口掩码方阵"),
    "hfu_unrouted_gflop": ("unrouted experts", "未路由到的专家"),
    "hfu_head_gflop": ("the chunked loss's head recompute", "分块损失重算的 LM 头"),
    "hfu_unknown": (" + terms this plan file does not name", " + 此计划文件未列出的项"),
    "note_failures": (  # durations written by ui.messages (duration, interval): "9.3 h", never "559.0 min"
        "failures: the {num_gpus}-GPU job fails every {mttf} on average; a checkpoint takes {write_s:,.1f} s, "
        "so the Young/Daly interval is {interval}; each failure costs half an interval plus the restart "
        "({restart})",
        "故障：{num_gpus} 块 GPU 的任务平均每 {mttf}故障一次；一次检查点需 {write_s:,.1f} 秒，"
        "因此 Young/Daly 间隔为 {interval}；每次故障损失半个间隔加 {restart}重启",
    ),
    "note_interval_cut": (  # the Young/Daly interval cut to the run's length (GoodputEstimate.interval_cut_to_run)
        "{young}, longer than the run: one checkpoint after {every}",
        "{young}，长于整个运行：仅在 {every}后保存一次检查点",
    ),
    "note_goodput": (
        "goodput {goodput:.1%}: the largest loss is {loss} ({share:.1%} of the wall time); the lost time adds"
        " {lost} to time-to-train, and to the cost where it is billed by the hour",
        "有效训练时间占比 {goodput:.1%}：最大的损失是{loss}（占总时间的 {share:.1%}）；损失的时间使训练时间增加 {lost}，"
        "按小时计费时费用也随之增加",
    ),
    # planner/model/goodput.py LossShares fields
    "loss_straggler": ("the slowest rank", "最慢的 rank"),
    "loss_evaluation": ("evaluation", "评估"),
    "loss_data_stall": ("input stalls", "数据输入等待"),
    "loss_startup": ("start-up", "启动"),
    "loss_checkpoints": ("checkpoint writes", "检查点写入"),
    "loss_failures": ("failures", "故障"),
    "loss_planned_restarts": ("maintenance restarts", "维护重启"),
    "loss_capacity_wait": ("waits for spot capacity", "等待竞价实例容量"),
    "note_infeasible": ("infeasible: {reason}; fix: {fix}", "不可行：{reason}；解决办法：{fix}"),
    # planner/api/batch_notices.py batch_beyond_published (the CLI's: batch_beyond_published_warnings)
    "batch_beyond_published": (
        BATCH_BEYOND_PUBLISHED_WORDS + ".",
        "全局批大小为每步 {batch:,} 个 token，是已公开预训练所用最大值（{largest:,}：{run}）的 {times:,.1f} 倍；"
        "其时间和费用为模型的估计，但没有任何运行表明这样的批大小能训练得同样好：超过临界批大小后，每步更多的 token"
        "不再减少所需步数。",
    ),
}

# The planner's refusals as sentences from their figures (ui/reasons.py), and the planner's detail
# line under an infeasible answer (ui/infeasible_words.py detail_text); "{custom_*}" are on-screen field names.
REASON_LABELS: dict[str, tuple[str, str]] = {
    "reason_heads_kv": (
        "{custom_heads} {heads} is not a multiple of {custom_kv_heads} {kv_heads}",
        "{custom_heads} {heads} 不是 {custom_kv_heads} {kv_heads} 的整数倍",
    ),
    "reason_hidden_heads": (
        "{custom_hidden} {hidden} is not divisible by {custom_heads} {heads}",
        "{custom_hidden} {hidden} 不能被 {custom_heads} {heads} 整除",
    ),
    "reason_experts_per_token": (
        "{custom_experts_per_token} exceeds {custom_experts}",
        "{custom_experts_per_token} 超过了 {custom_experts}",
    ),
    "reason_head_dim_odd": (
        "the head dimension {head_dim} ({custom_hidden} / {custom_heads}) is odd: RoPE needs an even one",
        "每个头的维度 {head_dim}（{custom_hidden} / {custom_heads}）为奇数：RoPE 需要偶数维度",
    ),
    # ModelSpec's checks of fields the custom-model form does not show (a preset or config.json breaks them)
    "reason_layer_counts": (
        "dense_layers, and sliding_layers + chunked_layers, cannot exceed num_layers",
        "dense_layers 以及 sliding_layers + chunked_layers 都不能超过层数 num_layers",
    ),
    "reason_sliding_window": ("sliding_layers needs a sliding_window", "sliding_layers 需要设置 sliding_window"),
    "reason_attention_chunk": ("chunked_layers needs an attention_chunk", "chunked_layers 需要设置 attention_chunk"),
    "reason_dense_not_moe": (
        "dense_layers applies to mixture-of-experts models only",
        "dense_layers 只适用于混合专家（MoE）模型",
    ),
    "reason_rotary_odd": (
        "the rotary dimension {rotary_dim} is odd: RoPE needs an even one",
        "旋转维度 {rotary_dim} 为奇数：RoPE 需要偶数维度",
    ),
    "reason_expert_groups": (
        "n_group {groups} and topk_group {topk_groups} cannot route {experts_per_token} of {experts} experts",
        "n_group {groups} 与 topk_group {topk_groups} 无法从 {experts} 个专家中路由 {experts_per_token} 个："
        "n_group 须把专家分成每组至少两个（或为 1），且 topk_group（不超过 n_group）个组须容纳前 {experts_per_token} 个",
    ),
    "reason_dp_shard_zero": (
        "dp_shard must be at least 1, or -1 for the rest of the GPUs",
        "dp_shard 必须至少为 1，或设为 -1 表示其余的 GPU",
    ),
    "reason_ddp_shard": (
        "sharding none (DDP) replicates: use dp_replicate, not dp_shard",
        "不分片（DDP）只做复制：请使用 dp_replicate，而不是 dp_shard",
    ),
    "reason_ac_blocks_mode": (  # RuleCode.AC_BLOCKS_MODE (TrainingConfig's check)
        "{blocks} checkpointed blocks need the checkpointing mode “blocks”, not “{mode}”",
        "检查点块数 {blocks} 需要激活重计算方式为“按块”，而不是“{mode}”",
    ),
    "reason_world_size_min": ("the GPU count must be at least 1 (got {gpus})", "GPU 数量必须至少为 1（当前为 {gpus}）"),
    "reason_degrees_product": (
        "the degrees multiply to {product}, not the {gpus} GPUs",
        "各并行度之积为 {product}，不等于 GPU 数 {gpus}",
    ),
    "reason_native_unsupported": (
        "the native trainer cannot build {features}: use the Hugging Face implementation, or another software"
        " stack for an estimate of pipeline, context or expert parallelism, or of fp8 with tensor parallelism",
        "原生训练器无法构建 {features}：请使用 Hugging Face 实现，或选择其他软件栈来估算流水线、上下文或专家并行，"
        "或 fp8 与张量并行",
    ),
    "reason_hf_tp": (
        "tensor parallelism of a Hugging Face model needs Llama-style blocks, not {features}: use tp=1, the native"
        " trainer where it builds the family, or another stack (an estimate)",
        "Hugging Face 模型的张量并行需要 Llama 式模块，而非 {features}：请使用 tp=1；若原生训练器支持该模型族，"
        "可改用原生实现；或选择其他软件栈（仅供估算）",
    ),
    "reason_qk_norm_tp": (
        "the native trainer's whole-projection q/k norm (OLMo 2) needs tp=1",
        "原生训练器的整投影 q/k 归一化（OLMo 2）需要 tp=1",
    ),
    "reason_cp_sliding": (
        "context parallelism has no sliding-window mask (window {window} < sequence length {seq_len})",
        "上下文并行不支持滑动窗口掩码（窗口 {window} < 序列长度 {seq_len}）",
    ),
    "reason_fp8_tp_hf": (
        "fp8 with tensor parallelism needs the native trainer (or another software stack, for an estimate)",
        "fp8 与张量并行同时使用需要原生训练器（或选择其他软件栈进行估算）",
    ),
    "reason_world_size": (
        "{gpus} GPUs are not divisible by dp_replicate × tp × pp × cp = {fixed}",
        "{gpus} 块 GPU 不能被 dp_replicate × tp × pp × cp = {fixed} 整除",
    ),
    "reason_tp_heads": (
        "{value} attention heads are not divisible by tp={tp}",
        "注意力头数 {value} 不能被 tp={tp} 整除",
    ),
    "reason_tp_kv_heads": (
        "{value} key/value heads are not divisible by tp={tp}",
        "KV 头数 {value} 不能被 tp={tp} 整除",
    ),
    "reason_tp_ffn": ("the FFN size {value} is not divisible by tp={tp}", "FFN 维度 {value} 不能被 tp={tp} 整除"),
    "reason_tp_vocab": (
        "the vocabulary {vocab} (padded to {padded}) is not divisible by tp={tp}",
        "词表大小 {vocab}（填充到 {padded}）不能被 tp={tp} 整除",
    ),
    "reason_seq_tp_cp": (
        "the sequence length {seq_len} is not divisible by tp × cp = {degree} (sequence parallelism)",
        "序列长度 {seq_len} 不能被 tp × cp = {degree} 整除（序列并行）",
    ),
    "reason_tp_domain": (
        "tp={tp} must divide the GPUs of one scale-up domain, {domain} here",
        "tp={tp} 必须位于一个 {domain} 块 GPU 的高速互联域之内",
    ),
    "reason_pp_layers": (
        "{stages} pipeline stages exceed {max_stages} (the layers, plus a stage each for the embedding and the head)",
        "{stages} 个流水线级超过了上限 {max_stages}（层数，外加嵌入层和输出头各一级）",
    ),
    "reason_1f1b_accum": (
        "the 1f1b schedule needs accumulation ≥ pp ({grad_accum} < {pp})",
        "1f1b 调度要求梯度累积 ≥ pp（{grad_accum} < {pp}）",
    ),
    "reason_seq_cp": (
        "the sequence length {seq_len} is not divisible by 2 × cp = {degree} (load-balanced context parallel)",
        "序列长度 {seq_len} 不能被 2 × cp = {degree} 整除（负载均衡的上下文并行）",
    ),
    "reason_precision": (
        "{gpu} does not support {precision} (no {precision} tensor-core rate): choose bf16 or another GPU",
        "{gpu} 不支持 {precision}（张量核心没有 {precision} 算力）：请改用 bf16 或其他 GPU",
    ),
    # What a software stack cannot run (the app's words: no CLI flags)
    "reason_stack_no_cp": (
        "{stack} has no context parallelism of the kind modelled: use cp 1, or a stack that has it",
        "{stack} 没有所建模的那种上下文并行：请用 cp 1，或选择具备它的软件栈",
    ),
    "reason_stack_no_moe": (  # trial s35 (app): DeepSeek-V3 under megatron-lm read 1,188 days at ep 16
        "{stack} (Megatron-LM of 2021-22) has no mixture-of-experts layers, which {model} needs: choose megatron-core,"
        " today's Megatron-LM",
        "{stack}（2021–22 年的 Megatron-LM）没有混合专家层，而 {model} 需要：请选择 megatron-core（当今的 Megatron-LM）",
    ),
    "reason_stack_no_alibi": (  # trial s36: BLOOM under megatron-core was timed, no note
        "{stack} has no ALiBi attention bias, which {model} needs (its GPT model offers learned, rotary or no"
        " positions): choose megatron-deepspeed, BigScience's fork that trained BLOOM with it",
        "{stack} 没有 ALiBi 注意力偏置，而 {model} 需要（其 GPT 模型只提供可学习、旋转或无位置编码）："
        "请选择 megatron-deepspeed（BigScience 用它训练了 BLOOM 的分支）",
    ),
    "stack_switched_alibi": (  # issue 27: StackSwitch.words, the CLI's
        "{stack} has no ALiBi attention bias, which {model} needs; BigScience's fork of Megatron-LM added it to"
        " train BLOOM: planned as {runs} (its profile and its validation rows)",
        "{stack} 没有 ALiBi 注意力偏置，而 {model} 需要；BigScience 的 Megatron-LM 分支为训练 BLOOM 加入了它："
        "按 {runs} 规划（使用其配置与验证数据）",
    ),
    "reason_stack_no_ep": (
        "{stack} trains Hugging Face's MoE modules, which run every expert on every rank (DeepSpeed's expert"
        " parallelism needs its own deepspeed.moe layers): use ep 1, or the megatron-core or megatron-deepspeed"
        " stack for expert parallelism",
        "{stack} 训练 Hugging Face 的 MoE 模块，每个 rank 运行全部专家（DeepSpeed 的专家并行需要它自己的 deepspeed.moe"
        " 层）：请用 ep 1，或用 megatron-core 或 megatron-deepspeed 软件栈做专家并行",
    ),
    "reason_stack_sharding": (
        "{stack} shards at most the optimizer state (ZeRO-1), not {sharding}",
        "{stack} 最多只切分优化器状态（ZeRO-1），不支持 {sharding}",
    ),
    "reason_stack_no_zero1": (
        "{stack} has no ZeRO-1 (its data parallelism is FSDP, FSDP without resharding after forward, or DDP):"
        " choose FSDP, ZeRO-2 or no sharding",
        "{stack} 没有 ZeRO-1（它的数据并行只有 FSDP、前向后不重新切分的 FSDP 或 DDP）：请选择 FSDP、ZeRO-2 或不切分",
    ),
    "reason_stack_ac_mode": (
        "{stack} has no '{ac}' activation checkpointing (its modes: {modes})",
        "{stack} 没有“{ac}”激活检查点模式（它只有 {modes}）",
    ),
    "reason_stack_no_pipeline": (
        "{stack} has no pipeline engine: use pp 1, or a stack that has one (megatron-core, torchtitan)",
        "{stack} 没有流水线引擎：请用 pp 1，或选择具备它的软件栈（megatron-core、torchtitan）",
    ),
    "reason_stack_hf_pipeline": (
        "{stack} trains Hugging Face's modules, which DeepSpeed's pipeline engine cannot run: use pp 1, or the"
        " megatron-deepspeed stack for Megatron-DeepSpeed's 3D parallelism",
        "{stack} 训练 Hugging Face 的模块，DeepSpeed 的流水线引擎无法运行它们：请用 pp 1，"
        "或用 megatron-deepspeed 软件栈做 Megatron-DeepSpeed 的三维并行",
    ),
    "reason_stack_autotp_zero3": (
        "{stack}'s tensor parallelism on Hugging Face's modules is AutoTP training, which runs ZeRO stage 0-2,"
        " not {sharding}",
        "{stack} 在 Hugging Face 模块上的张量并行是 AutoTP 训练，只支持 ZeRO 0-2 级，不支持 {sharding}",
    ),
    "reason_stack_pipeline_zero": (
        "{stack} pipelines with DeepSpeed's engine, which runs ZeRO stage 0/1 only, not {sharding}",
        "{stack} 使用 DeepSpeed 的流水线引擎，只支持 ZeRO 0/1 级，不支持 {sharding}",
    ),
    "reason_stack_interleaved": (
        "{stack} pipelines with DeepSpeed's engine, which has no interleaved schedule: use vpp 1",
        "{stack} 使用 DeepSpeed 的流水线引擎，没有交错调度：请用 vpp 1",
    ),
    "reason_stack_even_stages": (
        "{stack} splits the {layers} layers evenly over pp {pp} x vpp {vpp} stages, which do not divide them;"
        " the megatron-core and megatron-deepspeed stacks' stages may be uneven",
        "{stack} 把 {layers} 层平均分到 pp {pp} x vpp {vpp} 个阶段，但无法整除；"
        "megatron-core 与 megatron-deepspeed 软件栈的阶段可以不均匀",
    ),
    "reason_stack_interleaving": (
        "{stack}'s interleaved schedule (vpp {vpp}) needs pp > 2 and micro-batches divisible by pp"
        " (pp {pp}, {grad_accum} micro-batches)",
        "{stack} 的交错调度（vpp {vpp}）要求 pp > 2 且微批次数能被 pp 整除（pp {pp}，{grad_accum} 个微批次）",
    ),
    "reason_stack_offload_zero": (
        "{stack} offloads a ZeRO stage's sharded optimizer states (DeepSpeed's ZeRO-Offload, Megatron's"
        " distributed optimizer), not unsharded ones: shard with ZeRO-1 or more, or keep the states on the GPUs",
        "{stack} 只能卸载 ZeRO 分片后的优化器状态（DeepSpeed 的 ZeRO-Offload、Megatron 的分布式优化器），"
        "不能卸载未分片的状态：请使用 ZeRO-1 或更高的分片，或将状态保留在 GPU 上",
    ),
    "reason_stack_impl": (
        "{stack} trains its own modules (impl {modules}), not {impl}",
        "{stack} 训练其自身的模块（impl {modules}），而非 {impl}",
    ),
    "reason_stack_compile": (
        "{stack} runs its own fused kernels, not torch.compile",
        "{stack} 运行自身的融合内核，而非 torch.compile",
    ),
    "reason_stack_kernel": (
        "{stack} runs only these attention kernels: {kernels}; not {kernel} (FlashAttention-3 and cuDNN's"
        " come with TransformerEngine)",
        "{stack} 只能运行这些注意力内核：{kernels}；不能运行 {kernel}（FlashAttention-3 与 cuDNN 的内核随 TransformerEngine 提供）",
    ),
    "reason_stack_partition": (
        "partitioned activations are DeepSpeed's checkpointing under Megatron-DeepSpeed, not {stack}",
        "分区激活是 Megatron-DeepSpeed 下 DeepSpeed 的检查点方式，{stack} 不支持",
    ),
    "reason_stack_a2a_layout": (
        "the overlapped expert all-to-all needs expert parallelism (ep > 1, a MoE model), the interleaved"
        " schedule under a pipeline (vpp > 1 where pp > 1) and no full or block recompute"
        " (ep {ep}, pp {pp}, vpp {vpp}, ac {ac})",
        "专家 all-to-all 重叠需要专家并行（ep > 1，MoE 模型）、流水线下的交错调度（pp > 1 时 vpp > 1），"
        "且不能完整或按块重计算（ep {ep}，pp {pp}，vpp {vpp}，重计算 {ac}）",
    ),
    "reason_stack_a2a_overlap": (
        "the overlapped expert all-to-all is Megatron-Core's combined 1F1B schedule, not {stack}'s"
        " (DeepSeek-V3's DualPipe already hides its all-to-alls)",
        "专家 all-to-all 重叠是 Megatron-Core 的合并 1F1B 调度，{stack} 不支持"
        "（DeepSeek-V3 的 DualPipe 已隐藏其 all-to-all）",
    ),
    "reason_stack_tp_overlap": (
        "turning off the TP communication overlap is Megatron-Core's choice (--tp-comm-overlap), not {stack}'s,"
        " whose profile has no such overlap",
        "关闭张量并行通信重叠是 Megatron-Core 的选项（--tp-comm-overlap），{stack} 的配置本就没有此重叠",
    ),
    "reason_stack_grad_bf16": (
        "bf16 gradient buffers are Megatron-Core's, not {stack}'s",
        "bf16 梯度缓冲区是 Megatron-Core 的选项，{stack} 不支持",
    ),
    "reason_bf16_grads_precision": (
        "bf16 gradients need bf16 weights (bf16 or fp8; now {precision})",
        "bf16 梯度需要 bf16 权重（bf16 或 fp8；当前 {precision}）",
    ),
    "reason_param_remainders_layout": (
        "the precision-aware optimizer needs Megatron's distributed optimizer (sharding zero1, zero2 or fsdp;"
        " now {sharding}) and bf16 weights (bf16 or fp8; now {precision})",
        "精度感知优化器需要 Megatron 的分布式优化器（分片 zero1、zero2 或 fsdp；当前 {sharding}）和 bf16 权重"
        "（bf16 或 fp8；当前 {precision}）",
    ),
    "reason_param_remainders_precision": (
        "the precision-aware optimizer needs bf16 weights (bf16 or fp8; now {precision})",
        "精度感知优化器需要 bf16 权重（bf16 或 fp8；当前 {precision}）",
    ),
    "reason_stack_param_remainders": (
        "the precision-aware optimizer is Megatron-Core's, not {stack}'s",
        "精度感知优化器是 Megatron-Core 的选项，{stack} 不支持",
    ),
    "reason_stack_pure_bf16": (
        "pure bf16 is trainplan's, torchtitan's and hf-trainer's, not {stack}'s, which keeps a master copy of"
        " the weights",
        "纯 bf16 训练是 trainplan、torchtitan 和 hf-trainer 的选项，{stack} 不支持（它另存一份主权重）",
    ),
    "reason_pure_bf16_precision": (
        "pure bf16 trains bf16 weights: choose precision bf16 (now {precision})",
        "纯 bf16 训练的是 bf16 权重：请选择精度 bf16（当前 {precision}）",
    ),
    "reason_pure_bf16_offload": (
        "pure bf16 with CPU offload is not modelled (the CPU optimizer is modelled in fp32 only)",
        "纯 bf16 与 CPU 卸载的组合未建模（CPU 优化器只按 fp32 建模）",
    ),
    "reason_ac_blocks_rank": (
        "{blocks} checkpointed blocks per pp rank: a rank holds at most {most} ({layers} over pp {pp}, vpp {vpp})",
        "每个 pp rank 检查点 {blocks} 个块：一个 rank 最多只有 {most} 个（{layers} 层分到 pp {pp}、vpp {vpp}）",
    ),
    "reason_pp_native": (
        "pipeline parallelism needs the native trainer (or another software stack, for an estimate)",
        "流水线并行需要原生训练器（或选择其他软件栈进行估算）",
    ),
    "reason_cp_native": (
        "context parallelism needs the native trainer (or another software stack, for an estimate)",
        "上下文并行需要原生训练器（或选择其他软件栈进行估算）",
    ),
    "reason_vpp_pp": (
        "interleaved stages (vpp > 1) need pp > 1",
        "交错流水线（vpp > 1）需要 pp > 1",
    ),
    "reason_vpp_accum": (
        "the interleaved schedule needs an accumulation ({grad_accum}) that is a multiple of pp={pp}",
        "交错流水线调度要求梯度累积步数（{grad_accum}）为 pp={pp} 的整数倍",
    ),
    "reason_ep_fits": (
        "ep={ep} must be a multiple of cp={cp} and divide the {group} data- and context-parallel ranks it borrows",
        "ep={ep} 必须是 cp={cp} 的整数倍，并能整除其借用的 {group} 个数据并行与上下文并行 rank",
    ),
    "reason_ep_fits_tp": (
        "ep={ep} must be a multiple of cp × tp = {cp_tp} and divide the {group} data-, context- and tensor-parallel"
        " ranks it borrows",
        "ep={ep} 必须是 cp × tp = {cp_tp} 的整数倍，并能整除其借用的 {group} 个数据并行、上下文并行与张量并行 rank",
    ),
    "reason_ep_ddp": (
        "expert parallelism shards the experts: use sharding fsdp, zero1 or zero2",
        "专家并行需要对专家分片：请选择 fsdp、zero1 或 zero2 分片方式",
    ),
    "reason_ep_dense": ("ep={ep} needs a mixture-of-experts model", "ep={ep} 需要混合专家（MoE）模型"),
    "reason_expert_tp_dense": ("expert tp 1 needs a mixture-of-experts model", "专家 tp 为 1 需要混合专家（MoE）模型"),
    "reason_ep_experts": (
        "the {experts} experts are not divisible by ep={ep}",
        "{experts} 个专家不能被 ep={ep} 整除",
    ),
    "reason_ep_native": (
        "expert parallelism needs the native trainer (or another software stack, for an estimate)",
        "专家并行需要原生训练器（或选择其他软件栈进行估算）",
    ),
    "reason_ep_family": (
        "trainplan's trainer runs expert parallelism in its native MoE block only, which cannot build this model"
        " ({features}): use ep 1, or another software stack for an estimate",
        "trainplan 训练器只在其原生 MoE 模块中运行专家并行，而原生模块无法构建该模型（{features}）：请使用 ep 1，"
        "或选择其他软件栈进行估算",
    ),
    "reason_moe_tp": (
        "native MoE blocks take no tensor parallelism: use tp=1",
        "原生 MoE 模块不支持张量并行：请使用 tp=1",
    ),
    "reason_moe_shard": (
        "the MoE expert weights do not shard evenly over these ranks",
        "MoE 专家权重无法在这些 rank 上均匀分片",
    ),
    "reason_cal_toml": ("{name}: not valid TOML", "{name}：不是有效的 TOML 文件"),
    "reason_cal_unknown_table": (
        "{name}: unknown table(s) {tables}",
        "{name}：有未知的表 {tables}（只允许 [machine] 与 [gpus.<id>]）",
    ),
    "reason_cal_missing_table": ("{name}: table [{table}] is missing", "{name}：缺少表 [{table}]"),
    "reason_cal_machine": (
        "{name}: machine.{field} must be a non-empty string",
        "{name}：machine.{field} 必须是非空字符串",
    ),
    "reason_cal_machine_unknown": (
        "{name}: machine.{field} is not a [machine] field",
        "{name}：machine.{field} 不是 [machine] 的字段（只允许 host、device、driver、date、software）",
    ),
    "reason_cal_machine_date": (
        "{name}: machine.date {value} is not a date YYYY-MM-DD",
        "{name}：machine.date 的值 {value} 不是 YYYY-MM-DD 格式的日期",
    ),
    "reason_cal_device": (
        "{name}: the device {device} measured is {other}, not {gpu}",
        "{name}：实测设备 {device} 是 {other}，不是 {gpu}，其速率不能用于 {gpu}",
    ),
    "reason_cal_gpu": ("{name}: the catalog has no GPU {gpu}", "{name}：硬件目录中没有 GPU“{gpu}”"),
    "reason_cal_field": ("{name}: {field} is not an achievable rate", "{name}：{field} 不是可实测的速率字段"),
    "reason_cal_over": (
        "{name}: {field} {value} is over the datasheet's {ceiling} {limit:g}",
        "{name}：{field} 为 {value}，超过了规格书中的 {ceiling} {limit:g}",
    ),
    "reason_cal_other": ("{name}: not a usable calibration file", "{name}：不是可用的校准文件（英文页面给出详细原因）"),
    # The reader's refusals (planner/limits.py, RuleCode.INPUT_*): in the app only the default calibration
    # file is read from disk (an upload is parsed as sent), so the 中文 names the file a calibration file.
    "reason_cal_input_unreadable": (
        "{name}: cannot read the calibration file",
        "{name}：无法读取该校准文件（没有读取权限或文件系统出错）",
    ),
    "reason_cal_input_directory": (
        "{name}: a directory, not a calibration file",
        "{name}：是目录，不是校准文件（请给出普通文件）",
    ),
    "reason_cal_input_fifo": (
        "{name}: a FIFO, not a calibration file",
        "{name}：是命名管道（FIFO），不是校准文件（请给出普通文件）",
    ),
    "reason_cal_input_char_device": (
        "{name}: a character device, not a calibration file",
        "{name}：是字符设备，不是校准文件（请给出普通文件）",
    ),
    "reason_cal_input_block_device": (
        "{name}: a block device, not a calibration file",
        "{name}：是块设备，不是校准文件（请给出普通文件）",
    ),
    "reason_cal_input_socket": (
        "{name}: a socket, not a calibration file",
        "{name}：是套接字，不是校准文件（请给出普通文件）",
    ),
    "reason_cal_input_not_regular": (
        "{name}: not a regular file",
        "{name}：不是普通文件，不能作为校准文件（请给出普通文件）",
    ),
    "reason_cal_input_too_large": (
        "{name}: {size_bytes:,} bytes, over the {limit_bytes:,}-byte limit",
        "{name}：{size_bytes:,} 字节，超过 {limit_bytes:,} 字节的上限，不是校准文件",
    ),
    "reason_cal_input_grew": (
        "{name}: grew past the {limit_bytes:,}-byte limit while read",
        "{name}：读取时超过了 {limit_bytes:,} 字节的上限，不是校准文件",
    ),
    "reason_cal_input_not_utf8": (
        "{name}: not UTF-8 text (byte {byte})",
        "{name}：不是 UTF-8 文本（第 {byte} 字节处），不是校准文件",
    ),
    # A config.json the app cannot read (planner/catalog/hf_*.py): ``where`` names the upload.
    "reason_hf_no_file": ("{where}: no such config file", "{where}：找不到该配置文件"),
    "reason_hf_json": ("{where}: not valid JSON", "{where}：不是有效的 JSON 文件"),
    "reason_hf_nested": ("{where}: nested too deeply", "{where}：嵌套层数过深，不是模型配置"),
    "reason_hf_top_level": (
        "{where}: the top level must be a JSON object, got {type}",
        "{where}：顶层必须是 JSON 对象，实际是 {type}",
    ),
    "reason_hf_missing_key": ("{where}: missing key {field!r}", "{where}：缺少键 {field!r}"),
    "reason_hf_missing_text_config": (
        "{where}: missing key 'text_config'",
        "{where}：缺少键 'text_config'（语言模型部分；视觉部分不做规划）",
    ),
    "reason_hf_model_type": (
        "{where}: unsupported model_type {model_type} (supported: {supported}); see docs/extending.md",
        # the names as code: a run of plain names (olmoe, granite, granitemoe) is not prose to translate
        "{where}：不支持的 model_type {model_type}（支持：`{supported}`）；添加读取器的方法见 docs/extending.md",
    ),
    "reason_hf_model_type_architecture": (
        "{where}: unsupported model_type {model_type}; its architectures name {architecture}: set model_type to {family}",
        "{where}：不支持的 model_type {model_type}；其 architectures 为 {architecture}：请把 model_type 改为 {family}",
    ),
    "reason_hf_encoder_decoder": (
        "{where}: {model_type} is an encoder-decoder model: only decoder-only transformers are planned",
        "{where}：{model_type} 是编码器-解码器模型：trainplan 只规划仅解码器（decoder-only）的 Transformer",
    ),
    "reason_hf_state_space": (
        "{where}: {model_type} has state-space (Mamba) layers: only decoder-only transformers are planned",
        "{where}：{model_type} 含状态空间（Mamba）层：trainplan 只规划仅解码器（decoder-only）的 Transformer",
    ),
    "reason_hf_heads_hidden": (
        "{where}: {heads} attention heads do not divide hidden size {hidden}",
        "{where}：隐藏层维度 {hidden} 不能被 {heads} 个注意力头整除",
    ),
    "reason_hf_kv_heads": (
        "{where}: {kv_heads} key/value heads do not divide {heads} attention heads",
        "{where}：{heads} 个注意力头不能被 {kv_heads} 个键/值头整除",
    ),
    "reason_hf_experts_per_token": (
        "{where}: num_experts_per_tok exceeds num_local_experts",
        "{where}：num_experts_per_tok 超过了 num_local_experts",
    ),
    "reason_hf_dimensions": (
        "{where}: invalid model dimensions",
        "{where}：模型尺寸无效（英文页面给出详细原因）",
    ),
    "reason_hf_dimensions_rule": (
        "{where}: invalid model dimensions: {reason}",
        "{where}：模型尺寸无效：{reason}",
    ),
    "reason_hf_head_dim_odd": (
        "head_dim {head_dim} is odd: RoPE needs an even one",
        "每个头的维度 head_dim={head_dim} 为奇数：RoPE 需要偶数维度",
    ),
    "reason_hf_not_integer": (
        "{where}: {field!r} must be an integer, got {value}",
        "{where}：{field!r} 必须是整数，实际是 {value}",
    ),
    "reason_hf_out_of_range": (
        "{where}: {field!r} = {value} is out of range (1..{limit})",
        "{where}：{field!r} = {value} 超出范围（1..{limit}）",
    ),
    "reason_hf_not_bool": (
        "{where}: {field!r} must be true or false, got {value}",
        "{where}：{field!r} 必须是 true 或 false，实际是 {value}",
    ),
    "reason_hf_not_object": ("{where}: {field!r} must be an object", "{where}：{field!r} 必须是 JSON 对象"),
    "reason_hf_not_positive": (
        "{where}: {field!r} must be a positive number, got {value}",
        "{where}：{field!r} 必须是正数，实际是 {value}",
    ),
    "reason_hf_not_fraction": (
        "{where}: {field!r} must be in (0, 1], got {value}",
        "{where}：{field!r} 必须是 (0, 1] 之间的数，实际是 {value}",
    ),
    "reason_hf_not_cap": (
        "{where}: {field!r} must be a positive number or null, got {value}",
        "{where}：{field!r} 必须是正数或 null，实际是 {value}",
    ),
    "reason_hf_layer_count": (
        "{where}: {field!r} must be an integer in 0..{limit}, got {value}",
        "{where}：{field!r} 必须是 0..{limit} 之间的整数，实际是 {value}",
    ),
    "reason_hf_layer_types": (
        "{where}: 'layer_types' must list one attention type per layer ({layers}): full_attention,"
        " sliding_attention or chunked_attention",
        "{where}：'layer_types' 必须为每一层（共 {layers} 层）列出一种注意力类型：full_attention、"
        "sliding_attention 或 chunked_attention",
    ),
    "reason_hf_layer_list": (
        "{where}: {field} must be a list of layer indices, 0 to {last}",
        "{where}：{field} 必须是层编号（0 到 {last}）的列表",
    ),
    "reason_hf_no_rope_layers": (
        "{where}: text_config.no_rope_layers must list one flag per layer ({layers})",
        "{where}：text_config.no_rope_layers 必须为每一层（共 {layers} 层）给出一个标志",
    ),
    "reason_hf_mpt_qk_ln": ("{where}: attn_config.qk_ln is not supported", "{where}：不支持 attn_config.qk_ln"),
    "reason_hf_mpt_ffn_type": (
        "{where}: ffn_config.ffn_type {value} is not supported",
        "{where}：不支持 ffn_config.ffn_type {value}（只支持 'mptmlp'）",
    ),
    "reason_hf_mpt_attn_type": (
        "{where}: attn_config.attn_type must be a string, got {type}",
        "{where}：attn_config.attn_type 必须是字符串，实际是 {type}",
    ),
    "reason_hf_mpt_expansion": (
        "{where}: 'expansion_ratio' = {value} is not a sensible positive number",
        "{where}：'expansion_ratio' = {value} 不是合理的正数",
    ),
    "reason_hf_nemotron_act": (
        "{where}: hidden_act {value} is not supported for nemotron",
        "{where}：nemotron 不支持 hidden_act {value}（只支持 relu2 或 GeLU）",
    ),
    "reason_hf_mistral3_text": (
        "{where}: text_config.model_type {value} is not supported for mistral3",
        "{where}：mistral3 不支持 text_config.model_type {value}（只支持 'mistral'）",
    ),
    "reason_hf_deepseek_bias": (
        "{where}: attention_bias is not supported for {family}",
        "{where}：{family} 不支持 attention_bias",
    ),
    "reason_hf_deepseek_v2_router": (
        "{where}: {field} {value} is not supported for deepseek_v2",
        "{where}：deepseek_v2 不支持 {field} {value}（transformers 的路由只支持 topk_method 'greedy' 或"
        " 'group_limited_greedy'，且从不重新归一化：norm_topk_prob 须为 false）",
    ),
    "reason_hf_shared_expert": (
        "{where}: shared_expert_intermediate_size {shared} is not a multiple of moe_intermediate_size {width}",
        "{where}：shared_expert_intermediate_size {shared} 不是 moe_intermediate_size {width} 的整数倍"
        "（共享专家按完整专家规划）",
    ),
    "reason_hf_llama4_no_experts": (
        "{where}: a Llama 4 text model without expert layers is not supported",
        "{where}：不支持没有专家层的 Llama 4 文本模型",
    ),
    "reason_unknown_preset": ("unknown model preset {name!r}", "没有名为 {name!r} 的模型预设"),
    "reason_unknown_model": (
        "{name!r} is neither a model preset nor a config path",
        "{name!r} 既不是模型预设，也不是已有的配置文件路径",
    ),
    "reason_config_other": ("not a usable model config", "不是可用的模型配置（英文页面给出详细原因）"),
    # An estimate's next steps (planner/fix_codes.py FixCode, ui/reasons.py fix_text).
    "fix_shard_fsdp": (
        "shard parameters, gradients and optimizer states with FSDP",
        "用 FSDP 分片参数、梯度和优化器状态（sharding fsdp）",
    ),
    "fix_fsdp_group": (
        "shard with FSDP over at least {group} ranks (dp_shard now {dp_shard})",
        "用 FSDP 在至少 {group} 个 rank 上分片（当前 dp_shard={dp_shard}）",
    ),
    "fix_fsdp_group_more_gpus": (
        "shard with FSDP over at least {group} ranks (dp_shard now {dp_shard}) on {gpus} GPUs",
        "在 {gpus} 块 GPU 上用 FSDP 在至少 {group} 个 rank 上分片（当前 dp_shard={dp_shard}）",
    ),
    "fix_full_ac": ("enable full activation checkpointing", "开启完整的激活重计算"),
    "fix_full_ac_partial": (
        "enable full activation checkpointing, then more (alone it still needs {need:,.1f} GiB)",
        "开启完整的激活重计算，并再加其他措施（仅此一项仍需 {need:,.1f} GiB）",
    ),
    "fix_full_ac_cp": (
        "enable full activation checkpointing and split each sequence over cp={cp} ranks (context parallelism,"
        " now {now})",
        "开启完整的激活重计算，并把每条序列切分到 cp={cp} 个 rank 上（上下文并行，当前 {now}）",
    ),
    "fix_full_ac_cp_more_gpus": (
        "enable full activation checkpointing and split each sequence over cp={cp} ranks (context parallelism,"
        " now {now}) on {gpus} GPUs",
        "在 {gpus} 块 GPU 上开启完整的激活重计算，并把每条序列切分到 cp={cp} 个 rank 上（上下文并行，当前 {now}）",
    ),
    "fix_micro_batch": ("lower the micro-batch below {micro_batch}", "把微批减小到 {micro_batch} 以下"),
    "fix_tp": ("use tp={tp} (now {now})", "使用 tp={tp}（当前 {now}）"),
    "fix_tp_more_gpus": ("use tp={tp} (now {now}) on {gpus} GPUs", "在 {gpus} 块 GPU 上使用 tp={tp}（当前 {now}）"),
    "fix_cp": (
        "split each sequence over cp={cp} ranks (context parallelism, now {now})",
        "把每条序列切分到 cp={cp} 个 rank 上（上下文并行，当前 {now}）",
    ),
    "fix_cp_more_gpus": (
        "split each sequence over cp={cp} ranks (context parallelism, now {now}) on {gpus} GPUs",
        "在 {gpus} 块 GPU 上把每条序列切分到 cp={cp} 个 rank 上（上下文并行，当前 {now}）",
    ),
    "fix_pp": ("use more pipeline stages (pp > {pp})", "把各层分到更多流水线阶段（pp > {pp}）"),
    "fix_pp_more_gpus": (
        "split the layers over pp={stages} pipeline stages (now {pp}) on {gpus} GPUs",
        "在 {gpus} 块 GPU 上把各层分到 pp={stages} 个流水线阶段（当前 {pp}）",
    ),
    "fix_pp_stages": (
        "split the layers over pp={stages} pipeline stages (now {pp})",
        "把各层分到 pp={stages} 个流水线阶段（当前 {pp}）",
    ),
    "fix_one_f_one_b": (
        "use the 1f1b pipeline schedule: it holds {pp} micro-batches' activations, GPipe all {accum}",
        "改用 1f1b 流水线调度：它只保留 {pp} 个微批的激活，GPipe 保留全部 {accum} 个",
    ),
    "fix_bigger_gpu": ("use a GPU with more memory", "换用显存更大的 GPU"),
    "fix_no_one_fix": (
        "no one change fits it, nor does any GPU ({times:,.1f}x the largest, {largest}): shorten the sequence,"
        " or combine checkpointing, sharding and tp/pp/cp",
        "任何单一改动都无法放下，任何 GPU 也放不下（是最大者 {largest} 的 {times:,.1f} 倍）：缩短序列，或组合使用激活重计算、"
        "分片与 tp/pp/cp",
    ),
    "fix_host_offload": (
        "shard the offloaded states over more nodes, or keep them on the GPUs",
        "把卸载的状态分到更多节点上，或不卸载、留在 GPU 上",
    ),
    "fix_compile": ("compile the model and its loss (“torch.compile”)", "编译模型及其损失函数（torch.compile）"),
    "fix_offload": ("keep the optimizer states in host memory (“CPU offload”)", "把优化器状态放到主机内存（卸载）"),
    "fix_bf16_grads": (
        "keep Megatron's gradient buffers in bf16 (“bf16 gradients”)",
        "把 Megatron 的梯度缓冲区改为 bf16（bf16 梯度）",
    ),
    "fix_param_remainders": (
        "keep the master weights as 16-bit remainders (“Precision-aware optimizer”)",
        "主权重只保存 16 位余数（精度感知优化器）",
    ),
    "fix_bf16_grads_and_remainders": (
        "keep Megatron's gradient buffers in bf16 and the master weights as 16-bit remainders"
        " (“bf16 gradients” and “Precision-aware optimizer”)",
        "把 Megatron 的梯度缓冲区改为 bf16，主权重只保存 16 位余数（bf16 梯度、精度感知优化器）",
    ),
    "fix_pure_bf16": (
        "train in pure bf16: weights, gradients and AdamW states in bf16, no fp32 master, which changes the"
        " updates' precision (“Pure bf16”)",
        "改用纯 bf16 训练：权重、梯度和 AdamW 状态都用 bf16，不保留 fp32 主权重，更新精度随之改变（纯 bf16）",
    ),
    # planner/fix_codes.py with_replicas: after a fix that folds replicas into the FSDP group
    "fix_replicas": (
        FIX_REPLICAS,
        "，并设副本数 dp_replicate={dp_replicate}（当前 {dp_replicate_now}）、分片组大小 dp_shard={group_dp_shard}"
        "（当前 {dp_shard_now}）",
    ),
    # ... and after one that keeps the replicas and changes the FSDP group
    "fix_dp_shard": (FIX_DP_SHARD, "，并设分片组大小 dp_shard={group_dp_shard}（当前 {dp_shard_now}）"),
    "fix_join": ("; or ", "；或者"),
    "ex_over_memory_try": (
        "Does not fit: {need:,.1f} GiB per GPU (reserved + CUDA context), {usable:,.1f} GiB usable. Try: {fix}.",
        "放不下：每 GPU 需要 {need:,.1f} GiB（保留显存 + CUDA 上下文），可用 {usable:,.1f} GiB。可以尝试：{fix}。",
    ),
    "reason_other": ("the planner refuses this configuration", "规划器拒绝了该配置（英文页面给出规划器的原话）"),
    # the detail line under an infeasible answer, from InfeasiblePlan's exact figures
    "detail_deadline": (
        "Planner's figures: the fastest plan takes {need:,.2f} h, the deadline is {have:,.2f} h.",
        "规划器的精确数字：最快的方案需要 {need:,.2f} 小时，期限为 {have:,.2f} 小时。",
    ),
    "detail_budget": (
        "Planner's figures: the cheapest plan costs ${need:,.2f}, the budget is ${have:,.2f}.",
        "规划器的精确数字：最便宜的方案需要 ${need:,.2f}，预算为 ${have:,.2f}。",
    ),
    "detail_budget_deadline": (
        "Planner's figures: the cheapest plan that meets the deadline costs ${need:,.2f}, the budget is ${have:,.2f}.",
        "规划器的精确数字：满足期限的最便宜方案需要 ${need:,.2f}，预算为 ${have:,.2f}。",
    ),
    "detail_memory": (
        "Planner's figures: {need:,.2f} GiB needed per GPU, {have:,.2f} GiB on the largest allowed GPU.",
        "规划器的精确数字：每 GPU 需要 {need:,.2f} GiB，允许的最大 GPU 有 {have:,.2f} GiB。",
    ),
    "detail_shared_inventory": (
        "Planner's figures: {need:,.1f} GPU-days needed, {have:,.1f} offered.",
        "规划器的精确数字：需要 {need:,.1f} GPU·天，可提供 {have:,.1f} GPU·天。",
    ),
    "detail_inventory": (
        "Planner's figures: {need:,.0f} GPUs needed, {have:,.0f} allowed.",
        "规划器的精确数字：需要 {need:,.0f} 块 GPU，允许 {have:,.0f} 块。",
    ),
    "detail_candidates": (
        "Planner's figures: {count} candidates checked ({gpus} GPUs).",
        "规划器的精确数字：检查了 {count} 个候选方案（{gpus} 块 GPU）。",
    ),
    "upload_too_big": (
        "{name}: {size_mb:,.2f} MB is over the {limit_mb} MB limit for a model config (a config.json is a few KB).",
        "{name}：{size_mb:,.2f} MB 超过了模型配置的 {limit_mb} MB 上限（config.json 通常只有几 KB）。",
    ),
    "calibration_too_big": (
        "{name}: {size_mb:,.2f} MB is over the {limit_mb} MB limit for a calibration file (one is under 1 KB).",
        "{name}：{size_mb:,.2f} MB 超过了校准文件的 {limit_mb} MB 上限（校准文件通常不到 1 KB）。",
    ),
    "bad_calibration": (
        "Calibration file not used, the catalog's rates apply: {error}",
        "未采用校准文件，沿用目录中的速率：{error}",
    ),
    "calibration_cpu": (
        "It was measured on a CPU: it times {gpu} at that CPU's speed (a check of the file's format, not a "
        "calibration).",
        "该文件是在 CPU 上测得的：它按该 CPU 的速度为 {gpu} 计时（只检查文件格式，不是校准）。",
    ),
    "full_stop": (".", "。"),  # ends a sentence written without one, before the next
    "calibration_line": (
        "Rates of {gpus} measured on {host} ({device}, driver {driver}) on {date}: {name}",
        "{gpus} 的速率于 {date} 在 {host}（{device}，驱动 {driver}）上实测：{name}",
    ),
    "calibration_elsewhere": (
        "Catalog rates for {gpu}; the calibration file {name} measured {gpus} on {host} on {date}",
        "{gpu} 使用目录中的速率；校准文件 {name} 于 {date} 在 {host} 上实测的是 {gpus}",
    ),
    "probe_line": (
        "Probe ({steps} steps on {device}): step time {step_measured} measured vs {step_predicted} predicted; "
        "peak memory {peak_measured} measured vs {peak_predicted} predicted{errors}",
        "探测（{device} 上 {steps} 步）：单步时间实测 {step_measured}，预测 {step_predicted}；"
        "峰值显存实测 {peak_measured}，预测 {peak_predicted}{errors}",
    ),
    "probe_errors": (" (errors {step_pct} / {peak_pct})", "（误差 {step_pct} / {peak_pct}）"),
    "probe_not_comparable": (
        " (not comparable: not the planned GPU)",
        "（不可比较：不是计划中的 GPU）",
    ),
}
MESSAGE_LABELS.update(REASON_LABELS)

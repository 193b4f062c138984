"""Labels of the page's later controls and notes (issue 30, round 3), in English and Chinese.

Same shape as ``ui.i18n``'s table (key -> (English, 中文)), merged into it; kept apart because
ui/i18n.py is over the module size (CONTRIBUTING.md).
"""

from __future__ import annotations

PAGE_LABELS: dict[str, tuple[str, str]] = {
    # sidebar: the GPU table
    "gpu_allow_all": ("Allow every GPU type", "允许全部 GPU 型号"),
    "gpu_allowed_help": ("Tick the GPU types the planner may use.", "勾选规划器可以使用的 GPU 型号。"),
    "gpu_purchase_help": (
        "Buy: the purchase price per GPU, amortised with the ownership assumptions.",
        "购买：每块 GPU 的购买价，按持有成本假设摊销。",
    ),
    "gpu_allow_all_help": (
        "Tick every row again (after “Send to plan” kept one type), and give the type it sent its inventory "
        "back; the other inventories and prices stay as they are.",
        "重新勾选所有型号（“发送到规划”只保留了一种之后），并恢复被发送型号原来的库存；其他库存和价格保持不变。",
    ),
    # trial s35 (round 2): "Send to plan" replaced a typed inventory (64) by the explored count (8), unsaid
    "gpu_sent": (
        "“Send to plan” set {gpu}'s max to {count:,} (was {was}); “Allow every GPU type” gives it back.",
        "“发送到规划”把 {gpu} 的上限设为 {count:,}（原为 {was}）；“允许全部 GPU 型号”会恢复原值。",
    ),
    "gpu_no_limit": ("no limit", "不限"),
    # breakdown terms the planner added after ui/i18n.py's (the charts' legends, the notes)
    "mem_measured_correction": ("measured correction", "实测校正"),
    "time_measured_correction": ("measured correction", "实测校正"),
    "time_efficiency_ceiling": ("efficiency ceiling", "效率上限"),
    # the explorer
    "ex_usable": ("of {usable:,.1f} GiB usable", "可用 {usable:,.1f} GiB"),
    # chart hovers
    "hover_training": (
        "micro-batch {micro} × {accum} · checkpointing {ac}",
        "微批 {micro} × {accum} · 激活重计算 {ac}",
    ),
    # a chart point the search sets aside at --risk p80 / p90 (ui/figure_style.py): hover line, legend entry
    "hover_may_not_fit": (
        "may not fit at {risk}: the reserved peak's 80 % band passes the memory the GPU holds beside the CUDA"
        " context; the search takes a plan that surely fits before it",
        "{risk} 下可能放不下：预留峰值的 80% 误差区间上端超过 GPU 除 CUDA 上下文外的显存；搜索会优先选择确定放得下的方案",
    ),
    "may_not_fit_mark": (
        "may not fit at {risk} (memory band's high end past the GPU's memory)",
        "{risk} 下可能放不下（显存区间上端超过 GPU 显存）",
    ),
    # Streamlit's file uploader (its own words are English; the 中文 page replaces them by CSS)
    "uploader_button": ("Upload", "上传"),
    "uploader_limit": ("at most {mb} MB per file", "每个文件最大 {mb} MB"),
    # errors the app words itself (the trainer's and the file readers' are English sentences)
    "emit_name_bad": (
        "The job name is the download's folder name: use letters, digits, “-”, “_” or “.” (not “{name}”).",
        "任务名称就是下载文件夹的名称：只能使用字母、数字、“-”、“_”或“.”（不能是“{name}”）。",
    ),
    "emit_failed": ("Cannot write this job: {error}", "无法生成该任务：{error}"),
    "bad_purchase": (
        "{gpu}: the purchase price must be above $0 to price a bought GPU.",
        "{gpu}：购买价必须大于 0 美元，才能计算购买 GPU 的成本。",
    ),
    "run_no_job": (
        "{path} holds no job.json: enter a directory that trainplan emit (or the Downloads tab) wrote.",
        "{path} 中没有 job.json：请输入由 trainplan emit（或“下载”页）生成的任务目录。",
    ),
    "run_bad_job": (
        "{path}: job.json is not a job this trainplan can read.",
        "{path}：job.json 不是本版本 trainplan 能读取的任务文件。",
    ),
    # durations
    "under_minute": ("< 1 min", "不到 1 分钟"),
    # run view: a run without CUDA (the trainer measures MFU and peak memory on CUDA only)
    "run_no_cuda": (
        "No CUDA device in this run: peak memory and MFU are not measured (their panels show the prediction only).",
        "此次运行没有 CUDA 设备：未测量峰值显存和 MFU（这两个面板只显示预测值）。",
    ),
    "run_not_measured": ("not measured (no CUDA)", "未测量（无 CUDA）"),
    # review s43: a job longer than its reserved term holds several (``price_commitment`` is of one)
    "price_commitment_terms": (
        "{kind} bills whole {years}-year terms: {gpus} {gpu} for its {terms} terms cost {cost} ({per_term} a term),"
        " for a job of {days} ({share} of them); the cost counts {rest}.",
        "{kind} 按整个 {years} 年期限计费：{gpus} 块 {gpu} 的 {terms} 个期限费用为 {cost}（每个期限 {per_term}），"
        "本作业 {days}（占这些期限的 {share}）；成本{rest}。",
    ),
    # trial s43: HF Trainer and DeepSpeed train Hugging Face's MoE modules too, unwarned
    "hf_experts_stack": (
        "{model} runs on Hugging Face's modules under {stack}, whose MoE layers loop over the experts one at a time,"
        " each expert's kernel launches not timed (the step may be slower than shown): the Megatron-Core stack"
        " (sidebar, software stack) estimates a grouped-GEMM stack on the same GPUs.",
        "{model} 在 {stack} 下使用 Hugging Face 模块训练，其 MoE 层逐个专家循环计算，每个专家的内核启动开销未计入"
        "（实际步时可能更长）：在侧栏“软件栈”中选择 Megatron-Core，可估算分组 GEMM 软件栈在同样 GPU 上的表现。",
    ),
    "run_prediction_elsewhere": (
        "The predicted {predicted:,.0f} tokens/s is for the plan's {num_gpus} × {gpu}, not for this machine's CPU "
        "({measured:,.0f} tokens/s measured at the last step).",
        "预测的 {predicted:,.0f} token/秒 针对方案中的 {num_gpus} × {gpu}，而不是本机的 CPU（最后一步实测 {measured:,.0f} token/秒）。",
    ),
    "run_tokens_last_step": ("tokens/s, last step", "token/秒（最后一步）"),
    # a many-job answer's jobs held on a price no median of offers backs (planner/search/held_warnings.py
    # EstimatedHeldPrice; app49: the CLI warned of it, the page did not): "\\$" as in price_dearer
    "held_price_estimated": (
        "{answer} {verb} {gpu} at ${rate:,.2f}/GPU-h ({basis}) for {jobs}: its cost rests on that price. {fix}",
        "{answer}以每 GPU 小时 ${rate:,.2f}（{basis}）{verb} {gpu}，用于 {jobs}：其成本取决于这一价格。{fix}",
    ),
    "held_answer_portfolio": ("The portfolio", "该组合"),
    "held_answer_mixed": ("The mixed answer", "混合方案"),
    "held_verb_rented": ("rents", "租用"),
    "held_verb_reserved": ("reserves", "预留"),
    # run view: report.json's end-of-run table (trainer/probe.py format_report's rows; report50)
    "report_title": ("End of run against the plan (report.json)", "运行结束与方案对比（report.json）"),
    "report_figure": ("figure", "指标"),
    "report_predicted_band": ("predicted ({coverage:.0%} band)", "预测值（{coverage:.0%} 区间）"),
    "report_measured": ("measured", "实测值"),
    "report_error": ("error", "误差"),
    "report_in_band": ("in band", "在区间内"),
    "band_inside": ("yes", "是"),
    "band_outside": ("no", "否"),
    "report_step_s": ("step time (s)", "步时（秒）"),
    "report_tokens_per_s": ("tokens/s, job", "token/秒（整个任务）"),
    "report_peak_gib": ("allocated peak, GiB", "已分配峰值显存，GiB"),
    "report_mfu": ("MFU", "MFU（模型算力利用率）"),
    "report_reserved_gib": ("reserved peak, GiB", "保留峰值显存，GiB"),
    "report_ended": ("Run {outcome} at step {steps:,}.", "运行结束（{outcome}），第 {steps:,} 步。"),
    "report_resumes": (
        "A rerun resumes from the checkpoint of step {step:,}.",
        "重新运行将从第 {step:,} 步的检查点继续。",
    ),
    "report_restarts": (
        "No checkpoint is kept: a rerun starts from step 0.",
        "没有保存的检查点：重新运行将从第 0 步开始。",
    ),
    "report_not_comparable": (
        "Measured on {device}; the prediction is for {gpu}, so no error is computed nor its band checked.",
        "在 {device} 上测量；预测针对 {gpu}，因此不计算误差，也不检查区间。",
    ),
    "report_unknown_gpu": ("a GPU the catalog does not match", "目录中没有匹配的 GPU"),
    # report.json's outcome (trainer/run_state.py Outcome), as the run view words it
    "outcome_completed": ("completed", "已完成"),
    "outcome_stopped": ("stopped at the steps asked", "在指定步数处停止"),
    "outcome_early_stopped": ("stopped early", "提前停止"),
    # a stop at once saves nothing (review s50 M2): where a rerun resumes is said apart (report_resumes)
    "outcome_preempted": ("preempted", "被抢占"),
    "outcome_interrupted": ("interrupted", "被中断"),
    "outcome_diverged": ("diverged", "发散"),
    "outcome_failed": ("failed: its workers wrote no report", "失败：工作进程未写出报告"),
    "outcome_peer_lost": ("failed: a peer was lost", "失败：丢失了一个对等进程"),
    # portfolio with a horizon: the owned GPUs held to it (trial s51 M1, the CLI's horizon line)
    "holding_to_horizon": ("Owned GPUs held idle to day {day:,.0f}", "自有 GPU 闲置持有至第 {day:,.0f} 天"),
    "holding_to_horizon_help": (
        "What the owned GPUs cost at their held rate from the last job's end to the horizon, idle: a held"
        " GPU-hour costs its owned rate, busy or not.",
        "自有 GPU 从最后一个作业结束到时间范围终点闲置期间按持有成本计的费用：持有的每个 GPU 小时无论忙闲都按自有成本计费。",
    ),
    "owned_busy_to_horizon": ("Owned GPUs busy, to day {day:,.0f}", "自有 GPU 至第 {day:,.0f} 天的运行时间占比"),
    "billed_to_horizon": ("Billed to day {day:,.0f}", "截至第 {day:,.0f} 天的总费用"),
    "billed_to_horizon_help": (
        "The jobs, the owned GPUs' idle hours before the last job ends and held to the horizon after it,"
        " and any reserved terms' unused hours.",
        "包括各作业、最后一个作业结束前自有 GPU 的闲置时间、其后持有至时间范围终点的时间，以及预留期限中未使用的时间。",
    ),
}

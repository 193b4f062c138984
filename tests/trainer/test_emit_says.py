"""What emit says before anyone pays for GPUs (runner53): the data against the job's tokens (H1),
what a re-emit keeps and changes of the job it replaces (H2), the checkpoints' disk (M2) and the
placeholder Kubernetes image (M3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import jobs

from planner.fmt import file_size
from planner.layout import Layout, Precision, TrainingConfig
from planner.model.goodput import checkpoint_bytes
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.stacks import STACK_SETTINGS
from planner.plan import Plan
from trainer.data_budget import DataBudget, data_budget
from trainer.job import emit_job
from trainer.job_disk import checkpoint_disk
from trainer.job_scripts import PURE_BF16_JOB_WORDS
from trainer.job_spec import JobSpec, RunSettings
from trainer.launch import prepare_or_exit_code

TRAINING = TrainingConfig(seq_len=32, micro_batch=2, precision=Precision.FP32)
CORPUS_TEXT = "".join(
    f"document {i}: " + "the quick brown fox jumps over the lazy dog. " * 20 + "\n\n" for i in range(40)
)


def plan_for(layout: Layout, num_gpus: int, tokens: float | None = None, num_nodes: int = 1) -> Plan:
    plan = jobs.make_plan(layout, TRAINING, num_gpus, num_nodes=num_nodes)
    return plan if tokens is None else plan.model_copy(update={"training_tokens": tokens})


def emit_cli(capsys, plan: Plan, tmp_path: Path, out: Path, *flags: str) -> tuple[int, str, str]:
    from ui.cli import main

    plan_file = plan.save(tmp_path / f"plan-{plan.layout.describe().replace(' ', '_')}.json")
    capsys.readouterr()
    code = main(["emit", str(plan_file), "--out", str(out), *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("budget", "warns", "words"),
    [
        (DataBudget(1000, 10, planned=True, synthetic=True), True, "synthetic (random token sequences"),
        (DataBudget(1000, 10, planned=False, synthetic=True), False, None),
        (DataBudget(5000, 10, planned=True, synthetic=False, train_tokens=1000), True, "are 5.00 passes over"),
        (DataBudget(640_000_000, 10, planned=True, synthetic=False, train_tokens=1000), True, "640,000 passes"),
        (DataBudget(500, 10, planned=True, synthetic=False, train_tokens=1000), False, "are 0.50 passes over"),
        (DataBudget(500, 10, planned=True, synthetic=False), False, "counted when run prepares it"),
    ],
)
def test_data_budget_rule(budget: DataBudget, warns: bool, words: str | None) -> None:
    """runner53 H1: one rule, for emit and run: synthetic data for a plan's budget, and a corpus read
    more than once, warn; the fix is named."""
    assert budget.warns == warns
    line = budget.words("/corpus")
    if words is None:
        assert line is None
        return
    assert line is not None and words in line and line.startswith("warning: ") == warns
    if budget.synthetic:
        assert "--data DIR" in line


def test_emit_warns_of_synthetic_data_for_a_plans_budget_and_run_does_too(tmp_path, capsys) -> None:
    """runner53 H1: a 2T-token job was written on synthetic data, its only word the README table."""
    plan = plan_for(Layout(dp_shard=1), 1, tokens=1e6)
    code, out, _ = emit_cli(capsys, plan, tmp_path, tmp_path / "job")
    assert code == 0
    [warning] = [line for line in out.splitlines() if line.startswith("warning: data")]
    assert "synthetic" in warning and "--data DIR" in warning
    spec = JobSpec.load(tmp_path / "job")
    assert prepare_or_exit_code(tmp_path / "job", spec) is None  # the launcher's start, before torchrun
    assert "warning: data: synthetic" in capsys.readouterr().out
    _, estimate_out, _ = emit_cli(capsys, plan_for(Layout(dp_shard=1), 1), tmp_path, tmp_path / "estimate")
    assert "warning: data" not in estimate_out  # an estimate's job has no budget to say it against


def test_a_corpus_read_more_than_once_is_said_at_run_and_at_a_later_emit(tmp_path, capsys) -> None:
    """runner53 H1: 25 steps over 20,733 training tokens (five passes) went unsaid at emit and run."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text(CORPUS_TEXT)
    job = tmp_path / "job"
    code, out, _ = emit_cli(
        capsys, plan_for(Layout(dp_shard=1), 1), tmp_path, job, "--data", str(corpus), "--steps", "2000"
    )
    assert code == 0 and "its training tokens are counted when run prepares it" in out
    spec = JobSpec.load(job)
    assert prepare_or_exit_code(job, spec) is None
    said = capsys.readouterr().out
    train_tokens = json.loads((job / "data" / "meta.json").read_text())["splits"]["train"]["num_tokens"]
    expected = data_budget(spec, train_tokens)
    assert expected.warns and f"over the corpus's {train_tokens:,} training tokens" in said
    assert "warning: data: the job's" in said
    code, out, _ = emit_cli(capsys, plan_for(Layout(dp_shard=1), 1), tmp_path, job, "--steps", "2000")
    assert code == 0 and f"over the corpus's {train_tokens:,} training tokens" in out  # prepared: counted now


def test_a_layout_change_keeps_the_jobs_run_settings_and_lists_what_changed(tmp_path, capsys) -> None:
    """runner53 H2: emit --force to a new layout reset the data to synthetic, checkpoint_every 10 to the
    plan's interval and eval_every to 0, unsaid; the resumed run trained on synthetic data."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text(CORPUS_TEXT)
    job = tmp_path / "job"
    flags = ("--data", str(corpus), "--steps", "30", "--checkpoint-every", "10", "--eval-every", "10", "--lr", "1e-3")
    assert emit_cli(capsys, plan_for(Layout(dp_shard=1), 1), tmp_path, job, *flags)[0] == 0
    (job / "ckpt" / "step-000010").mkdir(parents=True)  # a checkpoint: the same-layout refusal applies
    code, out, _ = emit_cli(capsys, plan_for(Layout(dp_shard=2), 2), tmp_path, job, "--steps", "40", "--force")
    assert code == 0
    run = JobSpec.load(job).run
    assert (run.data, run.checkpoint_every, run.eval_every, run.lr) == (str(corpus.resolve()), 10, 10, 1e-3)
    [changed] = [line for line in out.splitlines() if line.startswith("changed from the job it replaces")]
    assert "-> fsdp dp_shard=2" in changed and "steps 30 -> 40" in changed and "data" not in changed
    # a setting given is changed, and said, cadence included
    code, out, _ = emit_cli(
        capsys,
        plan_for(Layout(dp_shard=2), 2),
        tmp_path,
        job,
        "--data",
        "synthetic",
        "--checkpoint-every",
        "5",
        "--force",
    )
    assert code == 0
    [changed] = [line for line in out.splitlines() if line.startswith("changed from the job it replaces")]
    assert f"data {corpus.resolve()} -> synthetic" in changed and "checkpoint_every 10 -> 5" in changed
    assert "steps" not in changed  # 40 was given: kept


def test_a_re_emit_without_flags_keeps_the_data_and_is_not_refused(tmp_path, capsys) -> None:
    """runner53 H2: the same layout re-emitted without --data was refused as 'data CORPUS -> synthetic'
    (and, with --force or before any checkpoint, switched to synthetic)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text(CORPUS_TEXT)
    job, plan = tmp_path / "job", plan_for(Layout(dp_shard=1), 1)
    assert emit_cli(capsys, plan, tmp_path, job, "--data", str(corpus), "--steps", "30", "--seed", "7")[0] == 0
    (job / "ckpt" / "step-000010").mkdir(parents=True)
    code, out, err = emit_cli(capsys, plan, tmp_path, job)
    assert code == 0, err
    run = JobSpec.load(job).run
    assert (run.data, run.steps, run.seed) == (str(corpus.resolve()), 30, 7)
    assert "changed from the job it replaces" not in out


def test_checkpoint_disk_is_said_at_emit_and_in_every_script(tmp_path, capsys) -> None:
    """runner53 M2: a 70B job kept 2 x 0.85 TB checkpoints plus one being written, and nothing said so."""
    plan = plan_for(Layout(dp_shard=16), 16, num_nodes=2)
    code, out, _ = emit_cli(capsys, plan, tmp_path, tmp_path / "job", "--keep-checkpoints", "3")
    assert code == 0
    per = checkpoint_bytes(plan.model, STACK_SETTINGS[plan.stack])
    disk = checkpoint_disk(JobSpec.load(tmp_path / "job"))
    assert disk is not None and disk.needed_bytes == pytest.approx(4 * per)
    words = f"3 kept x {file_size(per)}"
    assert words in out and f"{file_size(4 * per)} free needed" in out
    for name in ("README.md", "slurm.sbatch", "k8s.yaml"):
        assert words in (tmp_path / "job" / name).read_text(), name
    emit_job(plan, tmp_path / "none", name="none", run=RunSettings(save_checkpoints=False))
    assert "kept x" not in (tmp_path / "none" / "slurm.sbatch").read_text()


def test_a_pure_bf16_job_says_its_checkpoints_hold_bf16_at_half_the_bytes(tmp_path, capsys) -> None:
    """bf16pure55: emit of a pure-bf16 plan said "fp32 weights and AdamW state" at 12 bytes a parameter;
    its checkpoint holds bf16 weights and moments, 6."""
    bf16 = TRAINING.model_copy(update={"precision": Precision.BF16})
    mixed = jobs.make_plan(Layout(dp_shard=8), bf16, 8)
    pure = jobs.make_plan(Layout(dp_shard=8), bf16, 8, optimizer_precision=OptimizerPrecision(pure_bf16=True))
    code, out, _ = emit_cli(capsys, pure, tmp_path, tmp_path / "job")
    assert code == 0
    disk = checkpoint_disk(JobSpec.load(tmp_path / "job"))
    per = checkpoint_bytes(mixed.model, STACK_SETTINGS[mixed.stack])
    assert disk is not None and disk.per_checkpoint_bytes == pytest.approx(per / 2)
    assert f"x {file_size(per / 2)} (bf16 weights and AdamW state)" in out


def test_a_pure_bf16_jobs_files_name_its_precision_and_mixed_ones_say_nothing(tmp_path) -> None:
    """review55 L4: README.md, launch.sh, slurm.sbatch and k8s.yaml of a pure-bf16 job named no precision;
    they now say it trains in pure bf16 and that small updates may round away (L2), in one set of words."""
    bf16 = TRAINING.model_copy(update={"precision": Precision.BF16})
    pure_formats = OptimizerPrecision(pure_bf16=True)
    pure = jobs.make_plan(Layout(dp_shard=16), bf16, 16, num_nodes=2, optimizer_precision=pure_formats)
    mixed = jobs.make_plan(Layout(dp_shard=16), bf16, 16, num_nodes=2)
    emit_job(pure, tmp_path / "pure", name="pure", run=RunSettings())
    emit_job(mixed, tmp_path / "mixed", name="mixed", run=RunSettings())
    for name in ("README.md", "launch.sh", "slurm.sbatch", "k8s.yaml"):
        assert PURE_BF16_JOB_WORDS in (tmp_path / "pure" / name).read_text(), name
        assert "pure bf16" not in (tmp_path / "mixed" / name).read_text(), name
    assert "| precision | pure bf16: " in (tmp_path / "pure" / "README.md").read_text()


def test_the_default_k8s_image_is_called_a_placeholder(tmp_path, capsys) -> None:
    """runner53 M3: k8s.yaml named trainplan:latest, which nothing builds, as if it existed."""
    plan = plan_for(Layout(dp_shard=16), 16, num_nodes=2)
    code, out, _ = emit_cli(capsys, plan, tmp_path, tmp_path / "job")
    assert code == 0 and "trainplan:latest is a placeholder" in out
    assert "trainplan:latest is a placeholder" in (tmp_path / "job" / "k8s.yaml").read_text()
    code, out, _ = emit_cli(capsys, plan, tmp_path, tmp_path / "own", "--k8s-image", "reg.example/tp:1")
    assert code == 0 and "placeholder" not in out + (tmp_path / "own" / "k8s.yaml").read_text()


@pytest.mark.parametrize(
    ("size", "words"), [(846e9, "846 GB"), (2.538e12, "2.54 TB"), (999.6e9, "1 TB"), (5, "5 bytes")]
)
def test_file_size(size: float, words: str) -> None:
    assert file_size(size) == words

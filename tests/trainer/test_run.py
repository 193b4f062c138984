"""Whole runs in this process (world size 1, gloo): outputs, NaN steps, disk full, corrupt checkpoints,
probe OOM, early stopping, fp16, HF pretrained weights with frozen blocks, compiled blocks."""

from __future__ import annotations

import errno
import json
import math
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from support.jobs import losses_by_step, read_metrics, tiny_spec, write_job

import trainer.checkpoint as checkpoint_module
import trainer.step as step_module
from planner.errors import ExitCode
from planner.layout import Layout
from trainer.checkpoint import list_checkpoints
from trainer.job_spec import JobSpec
from trainer.optim import lr_factor
from trainer.train import main

SINGLE = Layout(dp_shard=1)


def train(job_dir: Path, *extra: str) -> int:
    return main([str(job_dir), "--device", "cpu", *extra])


def nan_at(monkeypatch, bad_calls: set[int]) -> None:
    """Make the loss of the given (1-based) micro-batch calls NaN: a real non-finite forward."""
    original, calls = step_module.model_loss, [0]

    def model_loss(head, output, labels):
        calls[0] += 1
        loss = original(head, output, labels)
        return loss * float("nan") if calls[0] in bad_calls else loss

    monkeypatch.setattr(step_module, "model_loss", model_loss)


def test_run_writes_metrics_validation_report_and_checkpoint(tmp_path, in_process):
    job = write_job(tmp_path, SINGLE, 1, steps=8, eval_every=4, eval_batches=2, checkpoint_every=4)
    run = JobSpec.load(job).run
    assert train(job) == ExitCode.OK
    records = read_metrics(job)
    assert [r["step"] for r in records] == list(range(1, 9))
    assert [r["val_loss"] is not None for r in records] == [False, False, False, True] * 2
    assert all(r["mfu"] is None and r["peak_mem_gib"] is None for r in records)  # CPU: no GPU numbers
    assert [r["lr"] for r in records[:4]] == pytest.approx([1e-3, 2e-3, 3e-3, 3e-3 * lr_factor(3, run)])
    validation = json.loads((job / "validation.json").read_text())
    assert validation["measured"]["peak_gib"] is None and validation["measured"]["step_s"] > 0
    report = json.loads((job / "report.json").read_text())
    assert report["outcome"] == "completed" and report["steps_done"] == 8
    assert report["losses"]["test_perplexity"] == pytest.approx(math.exp(report["losses"]["test"]))
    assert [step for step, _ in list_checkpoints(job / "ckpt")] == [4, 8]
    assert (job / "ckpt" / "step-000008" / "manifest.json").exists()


def test_non_finite_step_is_skipped_and_counted(tmp_path, in_process, monkeypatch):
    job = write_job(tmp_path, SINGLE, 1, steps=6, probe_steps=0)
    nan_at(monkeypatch, {3})
    assert train(job) == ExitCode.OK
    records = read_metrics(job)
    assert [r["skipped"] for r in records] == [False, False, True, False, False, False]
    assert records[2]["loss"] == "nan" and records[2]["grad_norm"] is None
    assert json.loads((job / "report.json").read_text())["bad_steps"] == 1


def test_too_many_bad_steps_stop_and_keep_the_last_good_checkpoint(tmp_path, in_process, monkeypatch, capsys):
    job = write_job(tmp_path, SINGLE, 1, steps=20, checkpoint_every=2, max_bad_steps=2, probe_steps=0)
    nan_at(monkeypatch, set(range(4, 100)))
    assert train(job) == ExitCode.DIVERGED
    assert [step for step, _ in list_checkpoints(job / "ckpt")] == [2, 4]  # step 4 made no update: still good
    assert "last good checkpoint: step-000004" in capsys.readouterr().out
    assert len(read_metrics(job)) == 5


def _fail_call(monkeypatch, owner, name: str, failing_call: int) -> None:
    real, calls = getattr(owner, name), [0]

    def failing(*args, **kwargs):
        calls[0] += 1
        if calls[0] == failing_call:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, failing)


@pytest.mark.parametrize("while_writing", ["shards", "manifest"])
def test_disk_full_while_saving_keeps_the_previous_checkpoint(while_writing, tmp_path, in_process, monkeypatch, capsys):
    job = write_job(tmp_path, SINGLE, 1, steps=6, checkpoint_every=2, probe_steps=0)
    if while_writing == "shards":  # the second checkpoint's DCP write
        _fail_call(monkeypatch, checkpoint_module.dcp, "save", 2)
    else:  # fsync of the second checkpoint's directory after its manifest (before the rename)
        _fail_call(monkeypatch, checkpoint_module, "_fsync_dir", 3)
    assert train(job) == ExitCode.DISK_FULL
    assert "disk full while writing checkpoint" in capsys.readouterr().err
    assert sorted(p.name for p in (job / "ckpt").iterdir()) == ["step-000002"]


def test_corrupt_checkpoint_falls_back_to_the_previous_one(tmp_path, in_process, capsys):
    job = write_job(tmp_path, SINGLE, 1, steps=6, checkpoint_every=3, min_lr_ratio=1.0, probe_steps=0)
    assert train(job) == ExitCode.OK
    first = losses_by_step(job)
    shard = job / "ckpt" / "step-000006" / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    capsys.readouterr()
    assert train(job, "--steps", "8") == ExitCode.OK
    out = capsys.readouterr().out
    assert "step-000006 is corrupt (__0_0.distcp does not match its sha256)" in out
    assert "resumed from checkpoint step-000003" in out
    assert [r["step"] for r in read_metrics(job)] == list(range(1, 9))  # each step once
    resumed = losses_by_step(job)
    for step in (4, 5, 6):  # redone from step 3, identically
        assert resumed[step] == pytest.approx(first[step], abs=1e-6)


def test_a_preempted_job_without_checkpoints_says_its_steps_are_lost(tmp_path, in_process, monkeypatch, capsys):
    """Trial s37: with --no-checkpoints a SIGTERM at step 16 said "stopped at step 16 before anything
    new was trained", and the rerun began at step 1."""
    import trainer.session_stop as stop_module

    calls = [0]

    def gone(_pid) -> bool:  # the launcher dies before the third step: stop as preempted
        calls[0] += 1
        return calls[0] >= 3

    monkeypatch.setattr(stop_module, "parent_gone", gone)
    job = write_job(tmp_path, SINGLE, 1, steps=6, save_checkpoints=False, probe_steps=0)
    assert train(job) == ExitCode.PREEMPTED
    out = capsys.readouterr().out
    assert "SIGTERM: stopped at step 2; this job saves no checkpoints (--no-checkpoints), so its 2 steps" in out
    assert "before anything" not in out and not (job / "ckpt").exists()


def test_a_stop_during_the_last_step_ends_the_job_completed_and_tested(tmp_path, in_process, monkeypatch, capsys):
    """Trial s45: SIGTERM during a job's last step ended it "preempted" at that step, without its test
    loss, and every rerun said "the job is complete ... its report.json stands": preempted, for good."""
    import trainer.session_stop as stop_module

    calls = [0]

    def gone(_pid) -> bool:  # asked at start-up, then after each step: the stop comes in step 3 of 3
        calls[0] += 1
        return calls[0] >= 4

    monkeypatch.setattr(stop_module, "parent_gone", gone)
    job = write_job(tmp_path, SINGLE, 1, steps=3, probe_steps=0)
    assert train(job) == ExitCode.OK
    report = json.loads((job / "report.json").read_text())
    assert (report["outcome"], report["steps_done"]) == ("completed", 3)
    assert report["losses"]["test"] is not None and calls[0] == 4
    assert sorted(p.name for p in (job / "ckpt").iterdir()) == ["step-000003"]


def test_no_checkpoint_left_starts_over_saying_so_and_keeps_the_earlier_run(tmp_path, in_process, capsys):
    """Trial s37: with every checkpoint corrupt the run said "falling back to the previous one" of
    the last, then trained from step 0 unsaid, cutting the finished run's metrics.jsonl to the next
    launch's 3 records and replacing its report. It still starts over (the same run, from the
    seed) when asked (--restart-from-scratch; tests/trainer/test_checkpoint_refusal.py: refused
    without it), the last says there is none, the start-over is said, and the earlier files are kept."""
    job = write_job(tmp_path, SINGLE, 1, steps=6, checkpoint_every=3, probe_steps=0)
    assert train(job) == ExitCode.OK
    report = (job / "report.json").read_text()
    for step in ("step-000003", "step-000006"):
        shard = job / "ckpt" / step / "__0_0.distcp"
        shard.write_bytes(shard.read_bytes()[:-8])
    capsys.readouterr()
    assert train(job, "--steps", "3", "--restart-from-scratch") == ExitCode.OK  # trial49 M5: asked for
    out = capsys.readouterr().out
    assert "step-000006 is corrupt" in out and "falling back to the previous one" in out
    assert "step-000003 is corrupt" in out and "no earlier checkpoint" in out
    assert "(step-000003.corrupt, step-000006.corrupt set aside): starting again from step 0" in out
    assert "the earlier run's metrics.before-restart-1.jsonl and report.before-restart-1.json kept" in out
    assert [r["step"] for r in read_metrics(job)] == [1, 2, 3]
    earlier = (job / "metrics.before-restart-1.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in earlier] == list(range(1, 7))
    assert (job / "report.before-restart-1.json").read_text() == report


def test_a_job_whose_plan_was_edited_after_emit_is_refused(tmp_path, in_process, capsys):
    """Trial s37: a hand-edited job.json (its layout, or seq_len) trained and reported against the
    recorded estimate of another configuration, 2x off, where explain refused the same file."""
    from trainer.launch import NodeLaunch, run_job

    job = write_job(tmp_path, SINGLE, 1, steps=2, probe_steps=0)
    spec = json.loads((job / "job.json").read_text())
    spec["plan"]["training"]["seq_len"] *= 2
    (job / "job.json").write_text(json.dumps(spec))
    assert train(job) == ExitCode.INVALID
    err = capsys.readouterr().err
    assert "does not pass this trainplan's checks (estimate.global_batch_tokens" in err and "emit the job again" in err
    with pytest.raises(ValueError, match="does not pass this trainplan's checks"):  # the launcher, before torchrun
        run_job(job, NodeLaunch(device="cpu"))
    assert not (job / "metrics.jsonl").exists()


def test_probe_out_of_memory_asks_for_a_replan(tmp_path, in_process, monkeypatch):
    job = write_job(tmp_path, SINGLE, 1, steps=6, probe_steps=2)

    def out_of_memory(self, batches):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(step_module.Stepper, "train_step", out_of_memory)
    assert train(job) == ExitCode.REPLAN
    replan = json.loads((job / "replan_needed.json").read_text())
    assert replan["reason"].startswith("out of memory during the probe (CUDA out of memory")
    assert replan["predicted"]["peak_gib"] > 0


def test_early_stopping_after_patience_evaluations(tmp_path, in_process, monkeypatch):
    job = write_job(tmp_path, SINGLE, 1, steps=20, eval_every=2, early_stop_patience=2, probe_steps=0)
    val_losses = iter([3.0, 3.1, 2.9, 2.95, 3.0, 3.5, 3.6])
    real_eval = step_module.Stepper.eval_loss

    def eval_loss(self, batches):
        real_eval(self, batches)
        return next(val_losses)

    monkeypatch.setattr(step_module.Stepper, "eval_loss", eval_loss)
    assert train(job) == ExitCode.OK
    report = json.loads((job / "report.json").read_text())
    # Evaluations at 2 (best), 4 (worse), 6 (best), 8 and 10 (worse twice): stop at 10.
    assert report["outcome"] == "early_stopped" and report["steps_done"] == 10
    assert [step for step, _ in list_checkpoints(job / "ckpt")] == [10]


def test_fp16_uses_dynamic_loss_scaling(tmp_path, in_process):
    job = write_job(tmp_path, SINGLE, 1, steps=4, precision="fp16", probe_steps=0)
    assert train(job) == ExitCode.OK
    records = read_metrics(job)
    assert all(r["loss_scale"] is not None for r in records) and not any(r["skipped"] for r in records)
    assert records[-1]["loss"] < records[0]["loss"]


def test_fp8_converts_every_block_linear_and_keeps_the_head(tmp_path, in_process):
    """torchao float8 on every block projection, the LM head in bf16; on CPU torch emulates the
    fp8 matmuls (slowly), so a small model trains a few steps close to its bf16 twin."""
    pytest.importorskip("torchao.float8")
    from torchao.float8.float8_linear import Float8Linear

    from trainer.model import build_native_model
    from trainer.parallel import apply_fp8

    small = tiny_spec(num_layers=2, hidden_size=64, ffn_hidden_size=128)  # fp8 needs dims divisible by 16
    model = build_native_model(small, seq_len=32)
    apply_fp8(model)
    kinds = {name: type(module) for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)}
    assert kinds.pop("output") is torch.nn.Linear and set(kinds.values()) == {Float8Linear} and len(kinds) == 14
    runs = {
        precision: write_job(tmp_path / precision, SINGLE, 1, model=small, steps=6, precision=precision, probe_steps=0)
        for precision in ("fp8", "bf16")
    }
    assert all(train(job) == ExitCode.OK for job in runs.values())
    fp8, bf16 = losses_by_step(runs["fp8"]), losses_by_step(runs["bf16"])
    # Close to bf16 (measured: within 6e-4), but not equal: the fp8 casts really ran.
    gap = max(abs(fp8[step] - bf16[step]) for step in bf16)
    assert sorted(fp8) == list(range(1, 7)) and 0 < gap < 1e-2


def test_cpu_offload_trains_like_the_default(tmp_path, in_process):
    plain = write_job(tmp_path / "plain", SINGLE, 1, steps=3, probe_steps=0)
    offload = write_job(tmp_path / "offload", SINGLE, 1, steps=3, probe_steps=0, offload=True)
    assert train(plain) == ExitCode.OK and train(offload) == ExitCode.OK
    assert losses_by_step(offload) == pytest.approx(losses_by_step(plain), abs=1e-6)


def test_invalid_plan_exits_with_a_one_line_error(tmp_path, in_process, capsys):
    job = write_job(tmp_path, Layout(dp_shard=1, cp=2), 2, steps=2)
    assert train(job) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert errors[0].startswith(f"error: plan: layout {Layout(dp_shard=1, cp=2).describe()} does not fit 1 process:")


def _hf_pretrained(tmp_path: Path):
    transformers = pytest.importorskip("transformers")
    from trainer.hf_model import config_from_spec

    torch.manual_seed(5)
    model = transformers.AutoModelForCausalLM.from_config(config_from_spec(tiny_spec(), 32))
    model.save_pretrained(tmp_path / "pretrained", safe_serialization=True)
    return model


def _checkpoint_weights(step_dir: Path, tmp_path: Path) -> dict[str, torch.Tensor]:
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    dcp_to_torch_save(step_dir, tmp_path / "full.pt")
    return torch.load(tmp_path / "full.pt", weights_only=False)["model"]


def test_hf_impl_loads_pretrained_weights_and_freezes_blocks(tmp_path, in_process):
    pretrained = _hf_pretrained(tmp_path)
    job = write_job(
        tmp_path / "job",
        SINGLE,
        1,
        steps=3,
        impl="hf",
        freeze_layers=2,
        probe_steps=0,
        hf_weights=str(tmp_path / "pretrained"),
    )
    assert train(job) == ExitCode.OK
    # The first step's loss is the pretrained model's loss on the first batch.
    from trainer.loader import build_loader

    run = JobSpec.load(job).run
    input_ids, labels = next(build_loader(run, job, "train", 32, 2, 0, 1, 512))
    with torch.no_grad():
        expected = step_module.cross_entropy(pretrained(input_ids=input_ids).logits, labels).item()
    assert read_metrics(job)[0]["loss"] == pytest.approx(expected, rel=1e-5)
    trained = _checkpoint_weights(job / "ckpt" / "step-000003", tmp_path)
    original = pretrained.state_dict()
    for name in ("model.layers.0.mlp.up_proj.weight", "model.layers.1.self_attn.q_proj.weight"):
        assert torch.equal(trained[name], original[name]), f"{name} is frozen"
    for name in ("model.layers.2.mlp.up_proj.weight", "model.layers.3.self_attn.q_proj.weight"):
        assert not torch.equal(trained[name], original[name]), f"{name} is trained"


def test_hf_impl_trains_a_gpt2_architecture(tmp_path, in_process):
    """Not only Llama: learned positions, LayerNorm, GeLU, Conv1D projections, tied head."""
    spec = tiny_spec(
        name="tiny-gpt2",
        family="gpt2",
        num_layers=2,
        num_kv_heads=4,
        tied_embeddings=True,
        mlp="gelu",
        norm="layernorm",
        position="learned",
        qkv_bias=True,
        out_bias=True,
        mlp_bias=True,
        norm_bias=True,
    )
    job = write_job(
        tmp_path, Layout(dp_shard=1), 1, model=spec, steps=3, impl="hf", probe_steps=0, activation_checkpointing="full"
    )
    assert train(job) == ExitCode.OK
    losses = losses_by_step(job)
    assert len(losses) == 3 and all(math.isfinite(v) for v in losses.values())


def test_hf_weights_that_do_not_match_are_refused(tmp_path, in_process, capsys):
    (tmp_path / "pretrained").mkdir()
    from safetensors.torch import save_file

    save_file({"model.embed_tokens.weight": torch.zeros(512, 256)}, str(tmp_path / "pretrained" / "model.safetensors"))
    job = write_job(tmp_path / "job", SINGLE, 1, steps=2, impl="hf", hf_weights=str(tmp_path / "pretrained"))
    assert train(job) == 2
    assert "weights do not match the model (missing ['lm_head.weight'" in capsys.readouterr().err


def test_compiled_blocks_match_eager_under_fsdp(in_process):
    """The per-block compile path (wrap before FSDP, names unchanged), with a fast backend.

    Inductor's CPU C++ build takes ~40 s for one block, too slow for CI; the trainer uses
    the same code with the default backend.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from trainer.model import ModelArgs, Transformer, native_init_rule
    from trainer.parallel import apply_compile, clean_name, init_parameters

    dist.init_process_group("gloo")
    try:
        mesh = init_device_mesh("cpu", (1,))
        args = ModelArgs.from_spec(tiny_spec(num_layers=2), seq_len=16)
        models = [Transformer(args), Transformer(args)]
        apply_compile(models[1], backend="aot_eager")
        losses, grads = [], []
        for model in models:
            for block in model.layers.values():
                fully_shard(block, mesh=mesh)
            fully_shard(model, mesh=mesh)
            init_parameters(model, seed=3, rule=native_init_rule(args))
            tokens = torch.randint(0, 512, (2, 16), generator=torch.Generator().manual_seed(1))
            loss = step_module.cross_entropy(model(tokens), tokens)
            loss.backward()
            losses.append(loss.item())
            grads.append(model.layers["1"].feed_forward.w2.weight.grad.full_tensor())
        assert type(models[1].layers["0"]).__name__.endswith("OptimizedModule")
        assert {clean_name(n) for n, _ in models[1].named_parameters()} == {n for n, _ in models[0].named_parameters()}
        assert losses[1] == pytest.approx(losses[0], rel=1e-5)
        torch.testing.assert_close(grads[1], grads[0], rtol=1e-4, atol=1e-6)
    finally:
        dist.destroy_process_group()


def test_extending_a_finished_job_trains_its_first_new_step_on_the_stretched_schedule(tmp_path, in_process):
    """Trial s27: `run --steps 34` on a finished 30-step job trained step 31 at the old schedule's
    rate (the optimizer's, restored from the checkpoint), then followed the stretched one."""
    job = write_job(tmp_path, SINGLE, 1, steps=6, checkpoint_every=3, probe_steps=0)
    assert train(job) == ExitCode.OK
    assert train(job, "--steps", "9") == ExitCode.OK
    run = JobSpec.load(job).run.model_copy(update={"steps": 9})
    logged = {r["step"]: r["lr"] for r in read_metrics(job)}
    for step in (7, 8, 9):  # metrics step s trains optimizer step s - 1
        assert logged[step] == pytest.approx(run.lr * lr_factor(step - 1, run), rel=1e-6), step


def test_a_resumed_run_trains_at_job_jsons_new_peak_rate(tmp_path, in_process, capsys):
    """Review s33: adopt_run was tested alone; here a real resume after job.json's lr changed (what
    `emit --force --lr` writes) trains at the new peak and says so."""
    job = write_job(tmp_path, SINGLE, 1, steps=6, checkpoint_every=3, warmup_steps=0, lr=3e-3)
    assert train(job, "--steps", "3") == ExitCode.OK
    spec = JobSpec.load(job)
    spec.model_copy(update={"run": spec.run.model_copy(update={"lr": 1e-2})}).save(job)
    capsys.readouterr()
    assert train(job) == ExitCode.OK
    said = capsys.readouterr()
    assert "peak learning rate 0.003 -> 0.01" in said.out + said.err
    run = JobSpec.load(job).run
    lrs = {r["step"]: r["lr"] for r in read_metrics(job)}
    assert lrs[4] == pytest.approx(1e-2 * lr_factor(3, run)) and lrs[3] == pytest.approx(3e-3 * lr_factor(2, run))

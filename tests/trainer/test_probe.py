"""Static plan checks, validation.json, replan_needed.json and report.json."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from support.jobs import PREDICTED_PEAK_GIB, PREDICTED_STEP_S, make_plan, tiny_spec

from planner.api import restack
from planner.catalog.models import get_preset
from planner.layout import Layout, PipelineSchedule, TrainingConfig
from planner.model.stacks import STACK_SETTINGS
from planner.reports import ReplanRequest, RunReport, ValidationReport
from trainer.job_spec import JobSpec, RunSettings, apply_run_overrides
from trainer.probe import (
    MemoryReading,
    ReplanNeeded,
    RunSummary,
    check_measured_fit,
    check_plan,
    format_report,
    write_report,
    write_validation,
)

CPU = torch.device("cpu")


def plan_for(layout: Layout, world: int, model=None, **training):
    return make_plan(layout, TrainingConfig(**{"seq_len": 32, **training}), world, model=model)


def refusal(plan, world: int, run: RunSettings | None = None) -> str:
    with pytest.raises(ValueError) as info:
        check_plan(plan, run or RunSettings(), world, CPU)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_layout_must_match_the_world_size():
    assert "does not fit 4 processes" in refusal(plan_for(Layout(dp_shard=1, tp=2), 2), 4)


def test_tied_embeddings_and_uneven_stages_pass_the_static_check():
    """A tied embedding/head may be pipelined, and 4 blocks may be cut into 3 stages."""
    tied = plan_for(Layout(dp_shard=1, pp=2), 2, tiny_spec(tied_embeddings=True), grad_accum=2)
    assert check_plan(tied, RunSettings(), 2, CPU).pp == 2
    assert check_plan(plan_for(Layout(dp_shard=1, pp=3), 3, grad_accum=3), RunSettings(), 3, CPU).pp == 3


def test_valid_plans_resolve_the_layout():
    layout = check_plan(plan_for(Layout(dp_shard=-1, tp=2), 4), RunSettings(), 4, CPU)
    assert (layout.dp_shard, layout.tp) == (2, 2)


@pytest.mark.parametrize(
    "layout, world, model, training, expected",
    [
        (
            Layout(dp_shard=1, pp=2, vpp=4),
            2,
            None,
            {"grad_accum": 4},
            "pp*vpp=8 pipeline stages exceed 6 (num_layers 4, plus a stage for the embedding and one for the head)",
        ),
        (
            Layout(dp_shard=1, pp=2, vpp=2),
            2,
            None,
            {"grad_accum": 5},
            "the interleaved schedule needs grad_accum (5) divisible by grad_accum // pp",
        ),
        (Layout(dp_shard=1, tp=8), 8, None, {}, "num_heads 4 is not divisible by tp=8"),
        (Layout(dp_shard=1, tp=4), 4, tiny_spec(num_kv_heads=1), {}, "num_kv_heads 1 is not divisible by tp=4"),
        (Layout(dp_shard=1, pp=7), 7, None, {"grad_accum": 7}, "pp*vpp=7 pipeline stages exceed 6 (num_layers 4"),
        (
            Layout(dp_shard=1, cp=4),
            4,
            None,
            {"seq_len": 36},
            "seq_len (load-balanced context parallel) 36 is not divisible by 2*cp=8",
        ),
        (Layout(dp_shard=1, cp=2), 2, None, {"impl": "hf"}, "context parallelism (cp > 1) needs impl 'native'"),
        (
            Layout(dp_shard=24),
            24,
            get_preset("mixtral-8x7b"),
            {"impl": "hf"},
            "MoE expert weights (8 experts, hidden 4096) do not shard evenly over dp_shard*cp=24 ranks",
        ),
        # Sequence parallelism splits each cp rank's 36/2 tokens over tp=4.
        (
            Layout(dp_shard=1, cp=2, tp=4),
            8,
            tiny_spec(num_kv_heads=4),
            {"seq_len": 36},
            "seq_len (sequence parallelism) 36 is not divisible by tp*cp=8",
        ),
        (Layout(dp_shard=1, pp=2), 2, None, {"grad_accum": 1}, "1f1b schedule needs grad_accum >= pp"),
        (Layout(dp_shard=1, pp=2), 2, None, {"grad_accum": 2, "impl": "hf"}, "needs impl 'native'"),
    ],
)
def test_static_checks_refuse_with_one_line(layout, world, model, training, expected):
    assert expected in refusal(plan_for(layout, world, model, **training), world)


def test_a_sequence_beyond_the_context_is_not_refused():
    """Context extension: the trainer builds positions for the longer sequence (a warning at plan time)."""
    assert check_plan(plan_for(Layout(dp_shard=1), 1, tiny_spec(max_seq_len=16)), RunSettings(), 1, CPU).dp_shard == 1


def test_fp8_without_torchao_is_refused(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torchao", None)  # import torchao -> ImportError
    monkeypatch.setitem(sys.modules, "torchao.float8", None)
    assert "fp8 training needs torchao (pip install torchao)" in refusal(
        plan_for(Layout(dp_shard=1), 1, precision="fp8"), 1
    )


def test_gpipe_accepts_fewer_microbatches_than_stages():
    plan = plan_for(Layout(dp_shard=1, pp=2, pp_schedule="gpipe"), 2, grad_accum=1)
    assert check_plan(plan, RunSettings(), 2, CPU).pp == 2
    # The run settings may override the plan's schedule: applied to the plan once, at emit, where
    # the re-estimate refuses a schedule the plan's accumulation cannot feed; the trainer's own
    # check refuses such a plan too.
    with pytest.raises(ValueError, match="run settings cannot run the plan: the 1f1b schedule needs grad_accum"):
        apply_run_overrides(plan, RunSettings(pipeline_schedule="1f1b"))
    overridden = plan.model_copy(update={"layout": plan.layout.model_copy(update={"pp_schedule": "1f1b"})})
    assert "1f1b" in refusal(overridden, 2)


def test_run_overrides_are_applied_to_the_plan_at_emit(tmp_path):
    from trainer.job import emit_job

    plan = plan_for(Layout(dp_shard=1, pp=2, pp_schedule="1f1b"), 2, grad_accum=2)
    run = RunSettings(pipeline_schedule="gpipe")
    emit_job(plan, tmp_path / "job", name="override", run=run)
    job = JobSpec.load(tmp_path / "job")
    assert job.plan.layout.pp_schedule == PipelineSchedule.GPIPE and job.run.pipeline_schedule == "gpipe"
    # Re-estimated for the schedule it runs: GPipe keeps both micro-batches' activations in flight,
    # 1F1B one on the last stage.
    planned = restack(plan, plan.stack, settings=STACK_SETTINGS[plan.stack]).estimate.memory.breakdown_gib
    assert job.plan.estimate.memory.breakdown_gib.activations > planned.activations
    for same in ("model", "gpu", "num_gpus", "training", "training_tokens", "stack"):
        assert getattr(job.plan, same) == getattr(plan, same), same
    with pytest.raises(ValueError, match="not applied to the plan"):
        JobSpec(name="stale", plan=plan, run=run)
    interleaved = plan_for(Layout(dp_shard=1, pp=2, vpp=2), 2, grad_accum=4)
    with pytest.raises(ValueError, match="pipeline_schedule gpipe cannot run the plan's layout"):
        emit_job(interleaved, tmp_path / "bad", name="bad", run=run)


def test_run_settings_are_checked_against_the_plan(tmp_path):
    plan = plan_for(Layout(dp_shard=1), 1)
    assert "freeze_layers=9" in refusal(plan, 1, RunSettings(freeze_layers=9))
    assert "needs impl 'hf'" in refusal(plan, 1, RunSettings(hf_weights=str(tmp_path)))
    hf_plan = plan_for(Layout(dp_shard=1), 1, impl="hf")
    assert "is not a directory" in refusal(hf_plan, 1, RunSettings(hf_weights=str(tmp_path / "missing")))


def test_validation_json_compares_prediction_and_probe(tmp_path):
    plan = plan_for(Layout(dp_shard=1), 1)
    report = write_validation(tmp_path, plan, [0.9, 0.1, 0.1, 0.2], MemoryReading(None, None, None), "cuda", plan.gpu)
    on_disk = json.loads((tmp_path / "validation.json").read_text())
    assert on_disk == report.model_dump(mode="json")
    assert ValidationReport.load(tmp_path / "validation.json") == report
    assert report.measured.step_s == 0.1 and report.error_pct.step_s == pytest.approx(-50.0)
    assert on_disk["predicted"] == {"peak_gib": PREDICTED_PEAK_GIB, "step_s": PREDICTED_STEP_S}
    assert on_disk["measured"] == {"peak_gib": None, "step_s": 0.1}  # median without the warm-up step
    assert on_disk["error_pct"]["step_s"] == pytest.approx(-50.0)  # (predicted - measured) / measured
    assert on_disk["error_pct"]["peak_gib"] is None
    on_cpu = write_validation(tmp_path, plan, [0.9, 0.1, 0.1, 0.2], MemoryReading(None, None, None), "cpu", None)
    assert on_cpu.comparable is False and on_cpu.error_pct.step_s is None
    # trial s27: on another GPU than the plan's the timings are recorded, not compared
    elsewhere = write_validation(tmp_path, plan, [0.9, 0.1, 0.1], MemoryReading(None, None, None), "cuda", "a10")
    assert (elsewhere.comparable, elsewhere.measured_gpu, elsewhere.error_pct.step_s) == (False, "a10", None)


def test_the_gpu_measured_on_is_matched_to_the_catalog(monkeypatch):
    """The GPU a CUDA run trains on, by NVML's name and memory, as `trainplan detect` matches it."""
    import types

    from trainer.probe import measured_gpu

    assert measured_gpu(torch.device("cpu")) is None
    for name, memory, expected in (
        ("NVIDIA H100 80GB HBM3", 85_520_809_984, "h100-sxm"),
        ("Tesla T4", 15_843_721_216, None),  # not in the catalog: nothing is compared
    ):
        props = types.SimpleNamespace(name=name, total_memory=memory)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _device, props=props: props)
        measured_gpu.cache_clear()  # one device per process: each case is another machine
        assert measured_gpu(torch.device("cuda", 0)) == expected, name
    measured_gpu.cache_clear()


def test_measured_overflow_writes_replan_needed(tmp_path):
    plan = plan_for(Layout(dp_shard=1), 1)
    fits = MemoryReading(peak_gib=60.0, reserved_gib=70.0, capacity_gib=80.0)
    check_measured_fit(tmp_path, plan, fits, headroom=0.1, is_rank0=True)
    assert not (tmp_path / "replan_needed.json").exists()
    too_big = MemoryReading(peak_gib=70.0, reserved_gib=75.0, capacity_gib=80.0)
    with pytest.raises(ReplanNeeded, match=r"75\.00 GiB"):
        check_measured_fit(tmp_path, plan, too_big, headroom=0.1, is_rank0=True)
    replan = json.loads((tmp_path / "replan_needed.json").read_text())
    assert replan["measured"] == {"peak_gib": 70.0, "reserved_gib": 75.0}
    assert replan["memory_correction"] == pytest.approx(75.0 / plan.estimate.memory.reserved_gib)
    assert replan["headroom_fraction"] == 0.1 and replan["capacity_gib"] == 80.0
    request = ReplanRequest.load(tmp_path / "replan_needed.json")
    assert request.model_dump(mode="json") == replan and request.training == plan.training
    assert request.measured.reserved_gib == 75.0 and request.layout == plan.layout.describe()


def test_report_has_predicted_and_measured(tmp_path):
    plan = plan_for(Layout(dp_shard=1), 1)
    summary = RunSummary(
        steps_done=10,
        outcome="completed",
        step_s=0.1,
        tokens_per_s=640.0,
        mfu=None,
        peak_gib=None,
        final_train_loss=3.0,
        final_val_loss=3.2,
        test_loss=3.3,
        test_perplexity=27.1,
        bad_steps=0,
        wall_s=5.0,
        launch_wall_s=5.0,
        measured_steps=7,
    )
    report = write_report(tmp_path, plan, summary, "cuda", plan.gpu)
    assert json.loads((tmp_path / "report.json").read_text())["measured"]["step_s"] == 0.1
    assert report.error_pct.step_s == pytest.approx(-50.0) and report.losses.test_perplexity == 27.1
    assert RunReport.load(tmp_path / "report.json") == report
    text = format_report(report)
    assert "step time (s)" in text and "-50.0%" in text and "perplexity 27.10" in text
    # trial s45: the rows' words name their units and which peak (the job README's is the reserved one)
    assert "allocated peak, GiB" in text and "tokens/s, job" in text and "peak_gib" not in text
    assert "measured over 7 step(s) of the job" in text and report.measured_steps == 7  # trial s25
    assert "(5 s this launch)" in text  # one launch: no whole-job figure beside it
    resumed = format_report(write_report(tmp_path, plan, dataclasses.replace(summary, wall_s=30.0), "cuda", plan.gpu))
    assert "(5 s this launch, 30 s in all)" in resumed  # the job's wall time over every launch
    before = report.model_copy(update={"launch_wall_s": None})  # a report written before the field
    assert "(5 s this launch)" in format_report(before)
    assert "memory peak of this launch" in text  # review s26: the step is the job's, the peak is not
    single = format_report(
        write_report(
            tmp_path, plan, dataclasses.replace(summary, measured_steps=1, measured_warmup_only=True), "cuda", plan.gpu
        )
    )
    assert "its only step, a warm-up" in single and "first left out" not in single
    on_cpu = format_report(write_report(tmp_path, plan, summary, "cpu", None))
    assert "measured on cpu" in on_cpu and "-50.0%" not in on_cpu
    mfu = format_report(write_report(tmp_path, plan, dataclasses.replace(summary, mfu=0.0031), "cuda", plan.gpu))
    assert "0.3%" in mfu and "0.003 " not in mfu  # trial s33: percent, as plan prints MFU


# The on-disk keys of the three reports: their JSON is read by people, scripts and the planner.
VALIDATION_KEYS = {
    "predicted": {"peak_gib", "step_s"},
    "measured": {"peak_gib", "step_s"},
    "device": None,
    "measured_gpu": None,
    "comparable": None,
    "error_pct": {"peak_gib", "step_s"},
    "band": {"coverage", "step_s", "tokens_per_s", "mfu", "reserved_gib"},
    "reserved_gib": {"predicted", "measured"},
    "capacity_gib": None,
    "probe_steps": None,
}
FIGURES = {"step_s", "tokens_per_s", "peak_gib", "mfu", "reserved_gib"}
REPORT_KEYS = {
    "predicted": FIGURES,
    "measured": FIGURES,
    "error_pct": FIGURES,
    "band": {"coverage", "step_s", "tokens_per_s", "mfu", "reserved_gib"},
    "device": None,
    "measured_gpu": None,
    "comparable": None,
    "losses": {"final_train", "final_val", "final_val_step", "test", "test_perplexity"},
    "steps_done": None,
    "outcome": None,
    "bad_steps": None,
    "wall_s": None,
    "launch_wall_s": None,
    "earlier_report": None,
    "measured_steps": None,
    "measured_warmup_only": None,
    "layout": None,
    "gpu": None,
}
REPLAN_KEYS = {
    "reason": None,
    "predicted": {"peak_gib", "reserved_gib"},
    "measured": {"peak_gib", "reserved_gib"},
    "capacity_gib": None,
    "headroom_fraction": None,
    "memory_correction": None,
    "layout": None,
    "training": set(TrainingConfig.model_fields),
}


def _keys(data: dict) -> dict:
    return {k: set(v) if isinstance(v, dict) else None for k, v in data.items()}


def test_reports_round_trip_through_json_with_their_keys(tmp_path):
    plan = plan_for(Layout(dp_shard=1), 1)
    memory = MemoryReading(peak_gib=70.0, reserved_gib=75.0, capacity_gib=80.0)
    validation = write_validation(tmp_path, plan, [0.3, 0.1], memory, "cuda", plan.gpu)
    summary = RunSummary(10, "completed", 0.1, 640.0, 0.3, 1.2, 3.0, None, 3.3, 27.1, 0, 5.0, 5.0)
    report = write_report(tmp_path, plan, summary, "cuda", plan.gpu)
    with pytest.raises(ReplanNeeded):
        check_measured_fit(tmp_path, plan, memory, headroom=0.1, is_rank0=True)
    for cls, name, keys, written in (
        (ValidationReport, "validation.json", VALIDATION_KEYS, validation),
        (RunReport, "report.json", REPORT_KEYS, report),
        (ReplanRequest, "replan_needed.json", REPLAN_KEYS, None),
    ):
        data = json.loads((tmp_path / name).read_text())
        assert list(data) == list(keys) and _keys(data) == keys, name  # same keys, same order
        loaded = cls.load(tmp_path / name)
        assert json.loads(loaded.to_json()) == data
        assert cls.model_validate_json(loaded.model_dump_json()) == loaded
        if written is not None:
            assert loaded == written


def test_an_unreadable_replan_file_still_asks_for_a_replan(tmp_path):
    from trainer.replan import read_replan_report

    assert read_replan_report(tmp_path) is None
    (tmp_path / "replan_needed.json").write_text("{not json")
    request = read_replan_report(tmp_path)
    assert "replan_needed.json: unreadable" in request.reason and request.memory_correction is None

"""The app's software stack and calibration upload (the CLI's ``--stack`` and ``--calibration``), headless.

Expected plans come from ``planner.api.plan`` with the stack's profile or the calibrated catalog
(``apply_calibration`` on the same file), so a choice that does not reach the planner fails here.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from support.app import EN, GPUS, ZH, card, english_sentences, open_tab, request_for, run_app

from planner.api import build_plan, plan
from planner.catalog.achievable import rate_file_values
from planner.catalog.calibration import CalibrationFile, apply_calibration, write_calibration
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.errors import CatalogError, RuleCode
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.stacks import Stack
from planner.plan import Plan
from ui import app_core, app_portfolio
from ui.calibration_upload import CalibrationUpload, calibrated_from_upload
from ui.i18n import Labels, plain
from ui.messages import memory_band_text, seconds
from ui.reasons import CALIBRATION_REASONS, reason_key, reason_text, refusal

MACHINE = dict(host="node-17", device="NVIDIA H100 80GB HBM3", driver="570.86.15", date="2026-11-30", software="torch")


def shown_card(p: Plan, tr: Labels = EN) -> dict[str, str]:
    """The plan card's headline figures for ``p`` (ui.plan_card.plan_card's formats)."""
    e = p.estimate
    assert e.time_to_train_h is not None and e.cost_usd is not None
    key, value = app_core.duration_key(e.time_to_train_h)
    return {
        tr("card_gpus"): f"{p.num_gpus} × {p.gpu}",
        tr("card_layout"): p.layout.describe(),
        tr("card_time"): tr(key, value=value),
        tr("card_cost"): app_core.money(e.cost_usd),
        tr("card_mfu"): f"{e.throughput.mfu:.1%}",
        tr("card_memory"): f"{e.memory.reserved_gib:.1f} GiB",
    }


def headline_of(at, p: Plan, tr: Labels = EN) -> dict[str, str]:
    """The card's figures of the keys ``shown_card`` gives ``p``."""
    shown = card(at)
    return {k: shown[k] for k in shown_card(p, tr)}


def headline(at, tr: Labels = EN) -> dict[str, str]:
    shown = card(at)
    return {k: shown[k] for k in shown_card(plan(request_for()).plan, tr)}


def upload(at, path: Path):
    at.sidebar.file_uploader(key="calibration_upload").upload(path.name, path.read_bytes(), "application/toml")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_another_stack_is_planned_like_the_api_and_is_estimate_only():
    at = run_app()
    trainplan = headline(at)
    at.sidebar.selectbox(key="stack").set_value(Stack.MEGATRON_CORE.value).run()
    expected = plan(request_for(stack=Stack.MEGATRON_CORE)).plan  # the CLI's path: the stack's profile
    assert expected.stack == Stack.MEGATRON_CORE
    assert headline(at) == shown_card(expected) != trainplan
    assert EN("estimate_only", stack="megatron-core") in [c.value for c in at.caption]  # on the card
    # trial s36: the stack's loss as counted (megatron-core: whole logits, vocab-parallel CE's 6 B)
    memory = expected.estimate.memory
    assert (memory.loss_chunk_tokens, memory.loss_bytes_per_logit) == (0, 6.0)
    assert EN("card_loss_whole", bytes=6.0) in [c.value for c in at.caption]
    open_tab(at, "tab_downloads")
    assert [b.key for b in at.get("download_button")] == ["download_plan"]  # no job directory
    assert EN("estimate_only", stack="megatron-core") in [i.value for i in at.info]


def test_megatron_deepspeed_is_offered_and_planned_like_the_api():
    """The sidebar offers every stack of the enum; the new one reaches the planner with its profile."""
    at = run_app()
    assert Stack.MEGATRON_DEEPSPEED.value in at.sidebar.selectbox(key="stack").options
    at.sidebar.selectbox(key="stack").set_value(Stack.MEGATRON_DEEPSPEED.value).run()
    assert not at.exception, [e.value for e in at.exception]
    expected = plan(request_for(stack=Stack.MEGATRON_DEEPSPEED)).plan
    assert expected.stack == Stack.MEGATRON_DEEPSPEED
    assert headline(at) == shown_card(expected)
    assert EN("estimate_only", stack="megatron-deepspeed") in [c.value for c in at.caption]


def test_an_alibi_model_under_megatron_lm_is_planned_as_its_fork_and_says_so():
    """Issue 27, as the CLI: Megatron-LM has no ALiBi, BigScience's fork of it (megatron-deepspeed)
    does; the app plans MPT under megatron-lm as that fork, with the notice in both languages."""
    mpt = get_preset("mpt-7b")
    expected = plan(request_for(model=mpt, stack=Stack.MEGATRON_DEEPSPEED, gpus={"a100-80gb-sxm": None})).plan
    for tr in (EN, ZH):
        at = run_app(gpus=["a100-80gb-sxm"], preset="mpt-7b", stack="megatron-lm", lang=tr.lang)
        notice = tr("stack_switched_alibi", stack="megatron-lm", model=plain("mpt-7b"), runs="megatron-deepspeed")
        assert notice in [i.value for i in at.info]
        assert headline_of(at, expected, tr) == shown_card(expected, tr)
        assert not at.error


def test_partitioned_activations_are_offered_under_megatron_deepspeed_only():
    """The checkbox appears with Megatron-DeepSpeed (both languages) and its plan is the API's."""
    for tr in (EN, ZH):
        at = run_app(lang=tr.lang)
        assert not [c for c in at.sidebar.checkbox if c.key == "partition_activations"]
        at.sidebar.selectbox(key="stack").set_value(Stack.MEGATRON_DEEPSPEED.value).run()
        box = next(c for c in at.sidebar.checkbox if c.key == "partition_activations")
        assert box.label == tr("partition_activations")
        box.check().run()
        assert not at.exception, [e.value for e in at.exception]
        expected = plan(request_for(stack=Stack.MEGATRON_DEEPSPEED, partition_activations=True)).plan
        assert expected.partition_activations
        assert headline(at, tr) == shown_card(expected, tr)


def test_torch_compile_is_offered_where_the_stack_compiles():
    """The checkbox appears under PyTorch's stacks, not the Megatron family's (trial s41: the app had
    no compile switch), and the card is the API's plan with --compile, which differs from the plain one."""
    compiled = plan(request_for(compile=True)).plan
    assert compiled.training.compile
    assert shown_card(compiled) != shown_card(plan(request_for()).plan)
    for tr in (EN, ZH):
        at = run_app(lang=tr.lang)
        box = next(c for c in at.sidebar.checkbox if c.key == "compile")
        assert box.label == tr("compile")
        box.check().run()
        assert not at.exception, [e.value for e in at.exception]
        assert headline(at, tr) == shown_card(compiled, tr)
        at.sidebar.selectbox(key="stack").set_value(Stack.MEGATRON_CORE.value).run()
        assert not [c for c in at.sidebar.checkbox if c.key == "compile"]


def test_the_all_to_all_overlap_is_offered_under_megatron_core_only():
    """The checkbox appears with Megatron-Core (both languages); the plan on the card is the API's
    with --moe-a2a-overlap, and the layout explorer times its layouts with the overlap too."""
    qwen = get_preset("qwen3-30b-a3b")
    request = request_for(qwen, gpus={"h100-sxm": None}, seq_len=4096, stack=Stack.MEGATRON_CORE, moe_a2a_overlap=True)
    expected = plan(request).plan
    exposed = plan(request.model_copy(update={"moe_a2a_overlap": False})).plan
    assert expected.moe_a2a_overlap and not exposed.moe_a2a_overlap
    for tr in (EN, ZH):
        at = run_app(gpus=["h100-sxm"], preset="qwen3-30b-a3b", seq_len=4096, lang=tr.lang)
        assert not [c for c in at.sidebar.checkbox if c.key == "moe_a2a_overlap"]
        at.sidebar.selectbox(key="stack").set_value(Stack.MEGATRON_CORE.value).run()
        box = next(c for c in at.sidebar.checkbox if c.key == "moe_a2a_overlap")
        assert box.label == tr("moe_a2a_overlap")
        assert headline(at, tr) == shown_card(exposed, tr)
        box.check().run()
        assert not at.exception, [e.value for e in at.exception]
        assert headline(at, tr) == shown_card(expected, tr) != shown_card(exposed, tr)
    at = open_tab(at, "tab_explorer", ZH)
    knobs = (("ex_num_gpus", 16), ("ex_tp", 1), ("ex_pp", 1), ("ex_vpp", 1), ("ex_cp", 1), ("ex_ep", 8))
    for key, value in (*knobs, ("ex_dp_replicate", 1), ("ex_micro_batch", 1), ("ex_grad_accum", 8)):
        at.number_input(key=key).set_value(value)
    for key, value in (("ex_gpu", "h100-sxm"), ("ex_sharding", "zero1"), ("ex_ac", "none"), ("ex_precision", "bf16")):
        at.selectbox(key=key).set_value(value)
    at.run()
    assert not at.error, [e.value for e in at.error]
    training = TrainingConfig(seq_len=4096, grad_accum=8, impl=request.impl)
    steps = {
        overlap: build_plan(
            qwen,
            "h100-sxm",
            Layout(ep=8, sharding=Sharding.ZERO1),
            training,
            num_gpus=16,
            training_tokens=request.training_tokens,
            stack=Stack.MEGATRON_CORE,
            moe_a2a_overlap=overlap,
        ).estimate.time.step_s
        for overlap in (True, False)
    }
    assert card(at)[ZH("ex_step")] == seconds(ZH, steps[True]) != seconds(ZH, steps[False])


def test_optimizer_formats_are_offered_under_megatron_core_only_and_reach_the_plan():
    """The two checkboxes appear with Megatron-Core (both languages), not with trainplan's own stack
    nor the 2021-22 megatron-lm profile (trial s40); the plan on the card is the API's with the
    formats asked (half the gradient reduction: a cheaper plan), and the card names them."""
    llama = get_preset("llama3-8b")
    both = OptimizerPrecision(grad_reduce_bf16=True, param_remainders=True)
    request = request_for(
        llama, gpus={"h100-sxm": None}, seq_len=4096, stack=Stack.MEGATRON_CORE, optimizer_precision=both
    )
    expected = plan(request).plan
    fp32 = plan(request.model_copy(update={"optimizer_precision": OptimizerPrecision()})).plan
    assert expected.optimizer_precision == both and expected.estimate.cost_usd < fp32.estimate.cost_usd
    keys = ("grad_reduce_bf16", "param_remainders")
    for tr in (EN, ZH):
        at = run_app(gpus=["h100-sxm"], preset="llama3-8b", seq_len=4096, lang=tr.lang)
        for stack in (Stack.TRAINPLAN, Stack.MEGATRON_LM, Stack.MEGATRON_CORE):
            at.sidebar.selectbox(key="stack").set_value(stack.value).run()
            boxes = [c for c in at.sidebar.checkbox if c.key in keys]
            assert [c.label for c in boxes] == ([tr(k) for k in keys] if stack == Stack.MEGATRON_CORE else [])
        assert headline(at, tr) == shown_card(fp32, tr)
        for box in boxes:
            box.check()
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert headline(at, tr) == shown_card(expected, tr) != shown_card(fp32, tr)
        formats = tr.join([tr("grad_reduce_bf16"), tr("param_remainders")])
        assert tr("card_optimizer", formats=formats) in [m.value for m in (*at.markdown, *at.caption)]


def test_pure_bf16_is_offered_where_the_stack_trains_so_and_reaches_the_plan():
    """The box appears under trainplan, torchtitan and hf-trainer (both languages), not under the
    Megatron family or DeepSpeed; ticked, the plan on the card is the API's pure-bf16 plan (half the
    states: a cheaper plan) and the card names the format."""
    pure = OptimizerPrecision(pure_bf16=True)
    request = request_for(get_preset("llama3-8b"), gpus={"h100-sxm": None}, seq_len=4096, optimizer_precision=pure)
    expected = plan(request).plan
    mixed = plan(request.model_copy(update={"optimizer_precision": OptimizerPrecision()})).plan
    assert expected.optimizer_precision == pure and expected.estimate.cost_usd < mixed.estimate.cost_usd
    offered = (Stack.TRAINPLAN, Stack.TORCHTITAN, Stack.HF_TRAINER)
    for tr in (EN, ZH):
        at = run_app(gpus=["h100-sxm"], preset="llama3-8b", seq_len=4096, lang=tr.lang)
        for stack in (Stack.MEGATRON_CORE, Stack.DEEPSPEED, *reversed(offered)):
            at.sidebar.selectbox(key="stack").set_value(stack.value).run()
            boxes = [c for c in at.sidebar.checkbox if c.key == "pure_bf16"]
            assert [c.label for c in boxes] == ([tr("pure_bf16")] if stack in offered else [])
        assert headline(at, tr) == shown_card(mixed, tr)
        boxes[0].check()
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert headline(at, tr) == shown_card(expected, tr) != shown_card(mixed, tr)
        shown = [m.value for m in (*at.markdown, *at.caption)]
        assert tr("card_optimizer", formats=tr("pure_bf16")) in shown
        # review55 M3: the memory band says that no measured peak ran pure bf16, in the page's language
        memory = memory_band_text(tr, expected.estimate.uncertainty)
        widened = expected.estimate.memory_band.widened_by
        said = tr("memory_band_unmeasured", features=tr("feature_pure_bf16"), widened=widened)
        assert memory is not None and said in memory and any(memory in text for text in shown)


def test_a_calibration_file_reaches_the_plan_and_names_its_machine(tmp_path):
    base = plan(request_for()).plan
    rate = rate_file_values(load_catalog().gpu(base.gpu).rates)["gemm_bf16_tflops_achieved"]
    path = write_calibration(
        tmp_path / "fast.toml", CalibrationFile(MACHINE, {base.gpu: {"gemm_bf16_tflops_achieved": rate * 1.25}})
    )
    at = upload(run_app(), path)
    expected = plan(request_for(), catalog=apply_calibration(load_catalog(), path)).plan
    assert expected.estimate.cost_usd < base.estimate.cost_usd  # faster GEMMs: a cheaper run
    assert headline(at) == shown_card(expected) != shown_card(base)
    line = EN("calibration_line", gpus=base.gpu, name="fast.toml", **MACHINE)
    assert line in [c.value for c in at.caption] and "node-17" in line and "2026-11-30" in line
    assert not at.error
    # a file for the other GPU only, and slower: the plan keeps the catalog's rates, and says so
    other = next(g for g in GPUS if g != base.gpu)
    slow = rate_file_values(load_catalog().gpu(other).rates)["gemm_bf16_tflops_achieved"] * 0.8
    machine = dict(MACHINE, device=load_catalog().gpu(other).device_name)  # measured on that GPU (calib50 M3)
    path = write_calibration(
        tmp_path / "slow.toml", CalibrationFile(machine, {other: {"gemm_bf16_tflops_achieved": slow}})
    )
    upload(at, path)
    assert headline(at) == shown_card(base)
    line = EN("calibration_elsewhere", gpu=base.gpu, gpus=other, name="slow.toml", **machine)
    assert line in [c.value for c in at.caption]


def test_a_calibration_measured_on_a_cpu_is_called_a_format_check(tmp_path, capsys):
    """trial s25: `calibrate --device cpu --gpu h100-sxm` then `plan --calibration` took 36.8
    million days without a word. The CLI warns (calibrate and every command that applies it), the
    app's card says so, in both languages."""
    from ui.cli import main

    base = plan(request_for()).plan
    cpu = dict(MACHINE, device="CPU (x86_64)", driver="none (cpu)")
    path = write_calibration(
        tmp_path / "cpu.toml", CalibrationFile(cpu, {base.gpu: {"gemm_bf16_tflops_achieved": 1.0}})
    )
    args = ["estimate", "--model", "gpt3-125m", "--gpu", base.gpu, "--num-gpus", "1", "--calibration", str(path)]
    assert main([*args, "--json"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"trainplan: warning: {path} was measured on a CPU: it times {base.gpu} at that CPU's speed"
                   " (a check of the file's format, not a calibration); measure on the GPU itself, or --no-calibration"]  # fmt: skip
    for tr in (EN, ZH):
        at = upload(run_app(lang=tr.lang), path)
        # the search left the H100 for the A100, whose catalog rates the card names
        values = dict(cpu, gpus=base.gpu, name="cpu.toml")
        # two sentences (trial s35, round 2: the full stop between them was missing)
        elsewhere = tr("calibration_elsewhere", gpu="a100-80gb-sxm", **values) + tr("full_stop")
        line = tr.sentences(elsewhere, tr("calibration_cpu", gpu=base.gpu))
        assert line in [c.value for c in at.caption]


def test_the_default_calibration_file_applies_as_in_the_cli():
    """With no upload, the per-user default file that plan/estimate/explain apply reaches the card
    too, and the sidebar says so (the test's XDG_CONFIG_HOME is a temporary folder)."""
    from ui.calibration import default_calibration_path

    base = plan(request_for()).plan
    rate = rate_file_values(load_catalog().gpu(base.gpu).rates)["gemm_bf16_tflops_achieved"]
    path = default_calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_calibration(path, CalibrationFile(MACHINE, {base.gpu: {"gemm_bf16_tflops_achieved": rate * 1.25}}))
    at = run_app()
    expected = plan(request_for(), catalog=apply_calibration(load_catalog(), path)).plan
    assert headline(at) == shown_card(expected) != shown_card(base)
    captions = [c.value for c in at.caption]
    assert EN("calibration_default", path=path) in captions
    assert EN("calibration_line", gpus=base.gpu, name=path.name, **MACHINE) in captions


@pytest.mark.parametrize("tr", [EN, ZH], ids=["en", "zh"])
def test_a_malformed_calibration_file_is_one_error_and_the_plain_plan(tmp_path, tr):
    path = tmp_path / "bad.toml"
    path.write_text("[machine\nhost = 1\n")
    with pytest.raises(CatalogError) as refused:
        apply_calibration(load_catalog(), path)
    at = upload(run_app(lang=tr.lang), path)
    reason = str(refused.value).replace(str(path), "bad.toml") if tr is EN else ZH("reason_cal_toml", name="bad.toml")
    assert [e.value for e in at.error] == [tr("bad_calibration", error=reason)]
    assert headline(at, tr) == shown_card(plan(request_for()).plan, tr)  # the catalog's own rates
    if tr is ZH:
        assert not english_sentences(at.error[0].value)


# --------------------------------------------------------------------------- without Streamlit

MACHINE_TABLE = "[machine]\n" + "".join(f'{k} = "{v}"\n' for k, v in MACHINE.items())
RATE_TABLE = "\n[gpus.h100-sxm]\ngemm_bf16_tflops_achieved = 700\n"
BROKEN = {  # a calibration file breaking each rule CALIBRATION_REASONS words in 中文
    RuleCode.CAL_TOML: "[machine\n",
    RuleCode.CAL_UNKNOWN_TABLE: "[other]\n",
    RuleCode.CAL_MISSING_TABLE: "[gpus.h100-sxm]\ngemm_bf16_tflops_achieved = 700\n",
    RuleCode.CAL_MACHINE_FIELD: '[machine]\nhost = "a"\n\n[gpus.h100-sxm]\ngemm_bf16_tflops_achieved = 700\n',
    RuleCode.CAL_MACHINE_UNKNOWN: f'{MACHINE_TABLE}rack = "r7"\n\n[gpus.h100-sxm]\ngemm_bf16_tflops_achieved = 700\n',
    RuleCode.CAL_MACHINE_DATE: MACHINE_TABLE.replace("2026-11-30", "yesterday") + RATE_TABLE,
    RuleCode.CAL_DEVICE: MACHINE_TABLE.replace(MACHINE["device"], "NVIDIA A100-SXM4-80GB") + RATE_TABLE,
    RuleCode.CAL_UNKNOWN_GPU: {"h900": {"gemm_bf16_tflops_achieved": 700.0}},
    RuleCode.CAL_NOT_A_RATE: {"h100-sxm": {"gemm_tflops": 700.0}},
    RuleCode.CAL_OVER_CEILING: {"h100-sxm": {"gemm_bf16_tflops_achieved": 5000.0}},
}


@pytest.mark.parametrize("code", list(BROKEN))
def test_every_calibration_refusal_has_its_own_chinese_sentence(tmp_path, code, monkeypatch):
    broken = BROKEN[code]
    if isinstance(broken, dict):
        data = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, broken)).read_bytes()
    else:
        data = broken.encode()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "private"))
    (tmp_path / "private").mkdir()
    with pytest.raises(CatalogError) as refused:
        calibrated_from_upload(CalibrationUpload("dir/my cal.toml", data), load_catalog())
    message = str(refused.value)
    assert message.startswith("my cal.toml") and "private" not in message  # the upload's name, not the temp file
    shown = refusal(refused.value)
    assert shown.code == code and reason_key(shown, CALIBRATION_REASONS) != CALIBRATION_REASONS.fallback, message
    assert not english_sentences(reason_text(ZH, shown, CALIBRATION_REASONS, name="my cal.toml"))
    assert list((tmp_path / "private").iterdir()) == []  # nothing left behind


def test_a_calibration_upload_over_the_cap_is_refused_before_it_is_read():
    with pytest.raises(app_core.UploadTooLarge, match="limit for a calibration file"):
        calibrated_from_upload(CalibrationUpload("big.toml", b"#" * 1_000_001), load_catalog())


def test_the_apps_plans_record_the_calibration_file_they_were_made_with(tmp_path):
    """The plan the card shows (and plan.json downloads) records the upload: name, hash, overrides."""
    from planner.model.settings import DEFAULT_SETTINGS
    from ui.cached import cached_plan

    base = plan(request_for()).plan
    path = write_calibration(
        tmp_path / "fast.toml", CalibrationFile(MACHINE, {base.gpu: {"hbm_copy_tbps_achieved": 2.0}})
    )
    upload = CalibrationUpload("fast.toml", path.read_bytes())
    request_json, headroom = request_for().model_dump_json(), DEFAULT_SETTINGS.memory_headroom
    outcome = cached_plan(request_json, headroom, upload)
    assert outcome.result is not None
    record = outcome.result.plan.calibration
    assert record is not None and record.file == "fast.toml" and record.machine.host == "node-17"
    assert record.entry(base.gpu).rates == ("hbm_copy_tbps_achieved",)
    assert Plan.model_validate_json(outcome.result.plan.to_json()).calibration == record
    plain = cached_plan(request_json, headroom, None).result
    assert plain is not None and plain.plan.calibration is None


def test_an_attention_kernel_and_a_risk_reach_the_plan():
    """The sidebar's kernel (--attention) and risk (--risk) are the request's: the card shows the API's plan,
    a named kernel makes it an estimate, and the risk changes what the search judges by."""
    from planner.accuracy import Risk
    from planner.model.attention_kernels import AttentionKernel

    at = run_app()
    at.sidebar.selectbox(key="attention").set_value(AttentionKernel.SDPA_FA2.value).run()
    expected = plan(request_for(attention=AttentionKernel.SDPA_FA2)).plan
    assert expected.attention == AttentionKernel.SDPA_FA2 and not expected.emittable
    assert headline(at) == shown_card(expected)
    assert EN("estimate_attention", kernel="sdpa-fa2") in [c.value for c in at.caption]
    at.sidebar.selectbox(key="attention").set_value("").run()
    at.sidebar.radio(key="risk").set_value(Risk.P50.value).run()
    assert headline(at) == shown_card(plan(request_for(risk=Risk.P50)).plan)


def test_a_network_reaches_the_plan_in_both_languages():
    """The sidebar's network (--network) is the request's: the card shows the API's plan on it and
    names the network beside the nodes; the default option is translated."""
    at = run_app()
    at.sidebar.selectbox(key="network").set_value("eth-100g").run()
    assert not at.exception, [e.value for e in at.exception]
    expected = plan(request_for(network="eth-100g")).plan
    assert expected.network == "eth-100g"
    assert headline(at) == shown_card(expected)
    assert card(at)[EN("card_nodes")].endswith("· eth-100g")
    at.sidebar.selectbox(key="network").set_value("").run()
    at.sidebar.radio(key="lang").set_value("zh").run()
    options = at.sidebar.selectbox(key="network").options
    assert ZH("network_default") in options
    # the network whose all-reduce was measured by message size says so, and where (comm.py's curve)
    assert ZH("network_option_curve", id="efa-p5-3200", gbit=400, nodes=16) in options
    assert ZH("network_option", id="eth-100g", gbit=25) in options


def test_the_portfolio_plans_every_job_on_the_sidebars_network(monkeypatch):
    """Jobs share one inventory, so one cluster: each is planned on the network the sidebar names
    now, whatever it was when the job was added (as with the stack)."""
    from ui import cached

    seen = {}
    monkeypatch.setattr(app_portfolio, "solve_jobs", lambda requests, *args, **kwargs: seen.update(requests))
    job = request_for().model_dump_json()
    cached.cached_portfolio.clear()
    cached.cached_portfolio(
        (("a", job),), (("h100-sxm", 8),), "cost", None, 1, 0.05, Stack.TRAINPLAN, None, "roce-400g"
    )
    assert seen["a"].network == "roce-400g"


def test_a_moe_family_on_hugging_faces_modules_is_warned_on_the_card_in_both_languages() -> None:
    # Trial s21: gpt-oss planned on HF's expert-by-expert loop without a word; the CLI warns, the
    # card says the same from the same record (PlanRequest.hf_experts_missing).
    request = request_for(model=get_preset("gpt-oss-20b"), gpus={"h100-sxm": None})
    missing = request.hf_experts_missing
    assert missing is not None and "num_experts=32" in missing
    for tr in (EN, ZH):
        at = run_app(gpus=["h100-sxm"], preset="gpt-oss-20b", lang=tr.lang)
        # app53 M6: a word per feature, not the CLI's field=value, and the bands' blind spot said
        gaps = tr.join(tr(f"native_gap_{g.feature}", value=plain(g.value)) for g in request.hf_experts_gaps)
        said = tr.sentences(tr("hf_experts", model=plain("gpt-oss-20b"), missing=gaps), tr("hf_experts_band_out"))
        assert said in [w.value for w in at.warning]
        assert "=" not in said and tr("native_gap_experts", value="32") in said
        assert tr is EN or not english_sentences(said.replace("Hugging Face", "").replace("Megatron-Core", ""))
    assert not [w for w in run_app(gpus=["h100-sxm"]).warning if "Hugging Face" in w.value]


def test_a_stack_offers_only_the_kernels_its_code_calls_and_words_its_refusal():
    """Trial s34 (app): megatron-lm offered cuDNN and FlashAttention-3, then refused them with the
    CLI's English sentence ("use --stack megatron-core") on the 中文 page too."""
    from planner.model.attention_kernels import AttentionKernel
    from planner.stack_rules import kernel_stack_problem
    from ui.reasons import LAYOUT_REASONS

    at = run_app()
    at.sidebar.selectbox(key="attention").set_value(AttentionKernel.CUDNN.value).run()
    at.sidebar.selectbox(key="stack").set_value(Stack.MEGATRON_LM.value).run()
    options = at.sidebar.selectbox(key="attention").options
    assert AttentionKernel.FLASH2.value in options and AttentionKernel.CUDNN.value not in options
    assert at.sidebar.selectbox(key="attention").value in ("", None) and not at.exception and not at.error
    refused = refusal(kernel_stack_problem(Stack.MEGATRON_LM, AttentionKernel.CUDNN))
    for tr in (EN, ZH):
        text = reason_text(tr, refused, LAYOUT_REASONS)
        assert "--" not in text and "cudnn" in text
    assert "只能运行" in reason_text(ZH, refused, LAYOUT_REASONS)


def test_a_portfolio_job_keeps_the_run_choices_its_new_stack_offers():
    """Review s40: a job added under megatron-core with its optimizer formats raised a traceback once
    the sidebar's stack changed (the same hole as --partition-activations): it keeps what the new stack
    offers."""
    from ui.cached import portfolio_requests

    both = OptimizerPrecision(grad_reduce_bf16=True, param_remainders=True)
    job = request_for(get_preset("llama3-8b"), stack=Stack.MEGATRON_CORE, optimizer_precision=both)
    jobs = (("a", job.model_dump_json()),)
    assert portfolio_requests(jobs, Stack.MEGATRON_CORE, None)["a"].optimizer_precision == both
    moved = portfolio_requests(jobs, Stack.TORCHTITAN, None)["a"]
    assert moved.stack == Stack.TORCHTITAN and moved.optimizer_precision == OptimizerPrecision()


def test_the_english_fix_names_the_sidebars_boxes_not_cli_flags():
    """Trial s40: the English explorer said "(--grad-reduce-in-bf16 --precision-aware-optimizer)" on a
    page whose boxes are "bf16 gradients" and "Precision-aware optimizer"; words without a flag stay
    the planner's own."""
    from planner.fix_codes import FixCode
    from planner.plan import FixHint
    from ui.reasons import fix_text

    hints = [FixHint(code=FixCode.BF16_GRADS_AND_REMAINDERS), FixHint(code=FixCode.FULL_AC)]
    said = fix_text(EN, hints)
    assert "--" not in said and "“bf16 gradients” and “Precision-aware optimizer”" in said
    assert said.endswith("; or enable full activation checkpointing")


def test_torchtitan_is_offered_only_the_modes_it_has():
    """Review s41: the sidebar and the explorer offered torchtitan "blocks", "attention" and
    "zero1", which it then refused; a kept choice it lacks falls back to one it has."""
    at = run_app()
    at.session_state["ac"] = ["blocks"]
    at.sidebar.selectbox(key="stack").set_value(Stack.TORCHTITAN.value).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.multiselect(key="ac").options == ["none", "selective", "full"]
    assert list(at.sidebar.multiselect(key="ac").value) == ["none", "selective", "full"]
    at = open_tab(at, "tab_explorer")
    assert "zero1" not in at.selectbox(key="ex_sharding").options
    assert at.selectbox(key="ex_ac").options == ["none", "selective", "full"]
    at.sidebar.selectbox(key="stack").set_value(Stack.TRAINPLAN.value).run()
    assert len(at.sidebar.multiselect(key="ac").options) == 5 and "zero1" in at.selectbox(key="ex_sharding").options


@pytest.mark.parametrize("tr", [EN, ZH])
def test_a_stack_round_trip_puts_the_checkpointing_modes_back_and_says_which_are_out(tr):
    """app53 M3: trainplan -> deepspeed -> hf-trainer -> trainplan left "Activation checkpointing
    allowed" at {none, full}: selective and blocks were gone for good, and nothing said so."""
    at = run_app(lang=tr.lang)
    start = list(at.sidebar.multiselect(key="ac").value)
    assert {"selective", "blocks"} <= set(start)
    for stack in (Stack.DEEPSPEED, Stack.HF_TRAINER):
        at.sidebar.selectbox(key="stack").set_value(stack.value).run()
        assert not at.exception, [e.value for e in at.exception]
        assert list(at.sidebar.multiselect(key="ac").value) == ["none", "full"]
        modes = tr.join(tr.option(m) for m in ("selective", "blocks"))
        assert tr("ac_set_aside", stack=stack.value, modes=modes) in [c.value for c in at.sidebar.caption]
    at.sidebar.selectbox(key="stack").set_value(Stack.TRAINPLAN.value).run()
    assert list(at.sidebar.multiselect(key="ac").value) == start
    assert not [c for c in at.sidebar.caption if c.value.startswith(Stack.HF_TRAINER.value)]


@pytest.mark.parametrize("config", ["deepseek_v2", "glm4_moe", "olmoe"])
def test_the_hf_modules_warning_words_each_missing_feature_in_both_languages(config):
    """app53 M6: the warning read "the native trainer lacks family='deepseek_v2', mla (latent
    attention), dense_layers=1 (...), num_experts=160": the CLI's field=value keys on the card."""
    from planner.catalog.models import model_from_hf_config
    from ui.card_notices import hf_experts_text

    model = model_from_hf_config(Path(__file__).parents[1] / "data" / "hf_configs" / f"{config}.json")
    request = request_for(model=model, gpus={"h100-sxm": None})
    assert request.hf_experts_missing is not None and "=" in request.hf_experts_missing  # the CLI's words
    chosen = plan(request).plan
    for tr in (EN, ZH):
        text = hf_experts_text(tr, request, chosen)
        assert "=" not in text and "partial_rotary_factor" not in text, text
        assert tr("native_gap_experts", value=str(model.num_experts)) in text
        assert text.endswith(tr("hf_experts_band_out"))

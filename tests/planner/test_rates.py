"""Per-GPU achievable rates: catalog fields, their provenance, and how the step-time model uses them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from planner.catalog.achievable import PROVENANCES
from planner.catalog.hardware import BUILTIN_DIR, CatalogError, load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, Precision, TrainingConfig
from planner.model import attention_kernels, rates
from planner.model.candidates import single
from planner.model.estimate import estimate
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS


def _write(tmp_path: Path, gpu_id: str, **changes) -> Path:
    """A copy of h100-sxm under ``gpu_id`` with fields changed (None removes one); a change given
    as (value, source) also sets its source."""
    entry = tomllib.loads((BUILTIN_DIR / "gpus" / "h100-sxm.toml").read_text())
    entry["id"] = gpu_id
    for key, value in changes.items():
        if value is None:
            entry.pop(key, None)
            entry["sources"].pop(key, None)
            continue
        value, source = value if isinstance(value, tuple) else (value, None)
        entry[key] = value
        if source is not None:
            entry["sources"][key] = source
    lines = [f"{k} = {json.dumps(v)}" for k, v in entry.items() if k != "sources"]
    lines += ["", "[sources]"] + [f"{k} = {json.dumps(v)}" for k, v in entry["sources"].items()]
    (tmp_path / "gpus").mkdir(exist_ok=True)
    path = tmp_path / "gpus" / f"{gpu_id}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_h200_rates_are_the_calibration_measurements_in_si():
    h200 = load_catalog().gpu("h200-sxm").rates
    assert h200.gemm_flops_per_s["bf16"] == pytest.approx(742.8e12)
    assert h200.copy_bandwidth_bytes_per_s == pytest.approx(4.26e12)
    assert h200.provenance["gemm_bf16_tflops_achieved"] == "MEASURED"
    assert h200.provenance["hbm_copy_tbps_achieved"] == "MEASURED"


def test_every_builtin_rate_states_its_provenance():
    for path in sorted((BUILTIN_DIR / "gpus").glob("*.toml")):
        raw = tomllib.loads(path.read_text())
        for key in (k for k in raw if k.endswith("_achieved")):
            assert raw["sources"][key].startswith(PROVENANCES), (path.name, key)


def test_a_rate_above_its_datasheet_figure_is_refused(tmp_path):
    _write(tmp_path, "fast", gemm_bf16_tflops_achieved=1200.0)
    with pytest.raises(CatalogError, match=r"fast.toml: field 'gemm_bf16_tflops_achieved': expected at most"):
        load_catalog([tmp_path])


def test_a_rate_without_provenance_is_refused(tmp_path):
    _write(tmp_path, "vague", gemm_bf16_tflops_achieved=(700.0, "someone said so, 2026-12-01"))
    with pytest.raises(CatalogError, match=r"sources.gemm_bf16_tflops_achieved': must start with one of MEASURED"):
        load_catalog([tmp_path])


def test_a_faster_measured_gemm_lowers_the_predicted_step(tmp_path):
    source = "MEASURED: test, 2026-12-01"
    _write(tmp_path, "slow-gemm", gemm_bf16_tflops_achieved=(500.0, source))
    _write(tmp_path, "fast-gemm", gemm_bf16_tflops_achieved=(900.0, source))
    catalog = load_catalog([tmp_path])
    model, training = get_preset("llama3-8b"), TrainingConfig(seq_len=2048, micro_batch=2)

    def step(gpu_id: str) -> float:
        e = estimate(model, gpu_id, Layout(dp_shard=8), training, num_gpus=8, catalog=catalog)
        return e.time.step_s

    assert step("fast-gemm") < step("h100-sxm") < step("slow-gemm")


def test_a_gpu_without_rates_falls_back_to_the_global_fractions():
    catalog = load_catalog()
    l40s = catalog.gpu("l40s")
    assert not l40s.rates.gemm_flops_per_s
    c = single(l40s, Layout(dp_shard=1), TrainingConfig(seq_len=2048), gpus_per_node=8, network_bandwidth=50e9)
    assert rates.gemm_rate(c, DEFAULT_SETTINGS)[0] == pytest.approx(362.05e12 * DEFAULT_SETTINGS.matmul_peak_fraction)
    assert rates.copy_bandwidth(c, DEFAULT_SETTINGS)[0] == pytest.approx(
        l40s.hbm_bandwidth_bytes_per_s * DEFAULT_SETTINGS.streaming_bandwidth_fraction
    )
    fp8 = single(
        l40s,
        Layout(dp_shard=1),
        TrainingConfig(seq_len=2048, precision=Precision.FP8),
        gpus_per_node=8,
        network_bandwidth=50e9,
    )
    assert rates.gemm_rate(fp8, DEFAULT_SETTINGS)[0] == pytest.approx(
        733e12 * DEFAULT_SETTINGS.fp8_matmul_peak_fraction
    )


def test_attention_rate_follows_the_catalog_the_kernel_the_head_dim_and_the_length():
    catalog = load_catalog()

    def table(gpu, seq=16384):
        return single(
            catalog.gpu(gpu), Layout(dp_shard=1), TrainingConfig(seq_len=seq), gpus_per_node=8, network_bandwidth=25e9
        )

    a100, h100 = table("a100-80gb-sxm"), table("h100-sxm")
    fa2 = DEFAULT_SETTINGS.but(cudnn_attention=False)
    # FlashAttention-2 reaches about twice the share of peak on A100 that it reaches on H100
    fwd_a100 = rates.attention_rates(a100, fa2, 128)[0][0] / 312e12
    fwd_h100 = rates.attention_rates(h100, fa2, 128)[0][0] / 989.4e12
    assert 1.8 < fwd_a100 / fwd_h100 < 2.4
    # trainplan's trainer gets cuDNN on Hopper (torch >= 2.11), FlashAttention-2 on Ampere: at
    # 16K causal, the catalog's non-causal figure times the kernel's published causal share
    fwd, bwd = (r[0] for r in rates.attention_rates(h100, DEFAULT_SETTINGS, 128))
    causal = attention_kernels.shape_shares(attention_kernels.CUDNN, 128, np.array(16384.0))
    assert (fwd, bwd) == (pytest.approx(702e12 * causal[0]), pytest.approx(612e12 * causal[1]))
    assert rates.attention_rates(a100, DEFAULT_SETTINGS, 128)[0][0] == pytest.approx(fwd_a100 * 312e12)
    # head dim 64 costs cuDNN about 30 % on H100 and FlashAttention-2 about 12 % (FA3 paper Fig. 5)
    for settings, share in ((DEFAULT_SETTINGS, 413 / 595), (fa2, 324 / 370)):
        ratio = rates.attention_rates(h100, settings, 64)[0][0] / rates.attention_rates(h100, settings, 128)[0][0]
        assert ratio == pytest.approx(share)
    # short causal sequences reach less of the kernel (the diagonal tiles): 1K against 16K, the
    # FA3 paper's 1K / 2K ratio (410 / 484) carrying cuDNN 9.19's 2K share (484 of 673 at 16K) down
    short = rates.attention_rates(table("h100-sxm", 1024), DEFAULT_SETTINGS, 128)[0][0]
    assert short / fwd == pytest.approx(410 / 673, rel=1e-6)
    mid = rates.attention_rates(table("h100-sxm", 4096), DEFAULT_SETTINGS, 128)[0][0]
    assert mid / fwd == pytest.approx(591 / 673, rel=1e-6)  # both measured by cuDNN 9.19 on H200
    # Megatron-Core runs cuDNN too, at its fitted share of it; a GPU without a cuDNN figure keeps
    # its FlashAttention-2 rate
    mc = rates.attention_rates(h100, MEGATRON_CORE_SETTINGS, 128)[0][0]
    assert mc == pytest.approx(fwd * MEGATRON_CORE_SETTINGS.attention_kernel_factor)
    assert rates.attention_rates(a100, MEGATRON_CORE_SETTINGS, 128)[0][0] == pytest.approx(
        fwd_a100 * 312e12 * MEGATRON_CORE_SETTINGS.attention_kernel_factor
    )


def test_the_kernel_follows_the_compute_capability_not_the_presence_of_a_figure(tmp_path):
    """SDPA's choice is by compute capability (attention_kernels.sdpa_prefers_cudnn): a cuDNN
    figure entered for an Ampere part does not switch it to cuDNN, and a Hopper part without one
    runs cuDNN at the FlashAttention-2 figure it has (the rate unknown, the kernel not)."""
    _write(tmp_path, "ampere-with-cudnn", compute_capability="8.0")
    _write(tmp_path, "hopper-without-cudnn", cudnn_attention_fwd_tflops_achieved=None)
    catalog = load_catalog([tmp_path])

    def forward(gpu_id: str) -> float:
        c = single(
            catalog.gpu(gpu_id),
            Layout(dp_shard=1),
            TrainingConfig(seq_len=4096),
            gpus_per_node=8,
            network_bandwidth=25e9,
        )
        return rates.attention_rates(c, DEFAULT_SETTINGS, 128)[0][0]

    h100 = catalog.gpu("h100-sxm").rates
    seq = np.array(4096.0)
    flash2 = attention_kernels.shape_shares(attention_kernels.FLASH2, 128, seq)[0]
    cudnn = attention_kernels.shape_shares(attention_kernels.CUDNN, 128, seq)[0]
    assert forward("ampere-with-cudnn") == pytest.approx(h100.attention_fwd_flops_per_s * flash2)
    assert forward("hopper-without-cudnn") == pytest.approx(h100.attention_fwd_flops_per_s * cudnn)
    assert forward("h100-sxm") == pytest.approx(h100.cudnn_attention_fwd_flops_per_s * cudnn)
    assert [attention_kernels.sdpa_prefers_cudnn(cc) for cc in ((8, 0), (8, 9), (9, 0), (10, 0), (12, 0), None)] == [
        False,
        False,
        True,
        True,
        False,
        False,
    ]


def test_a_compute_capability_that_is_not_major_dot_minor_is_refused(tmp_path):
    _write(tmp_path, "odd", compute_capability="sm90")
    with pytest.raises(
        CatalogError, match=r"odd.toml: field 'compute_capability': expected a value like '9.0', got 'sm90'"
    ):
        load_catalog([tmp_path])


def test_kernel_shares_interpolate_in_log_length_and_hold_at_the_ends():
    table = attention_kernels.FLASH2.causal_seq_fwd
    assert attention_kernels.share(table, 100.0) == pytest.approx(191 / 370)  # held below 512
    # past 16K the B200 benchmark's ratios carry it to 128K (411.0 / 394.5), then it is held
    assert attention_kernels.share(table, 1 << 20) == pytest.approx(335 / 370 * 411.0 / 394.5)
    assert attention_kernels.share(table, 16384.0) == pytest.approx(335 / 370)
    between = attention_kernels.share(table, 1448.0)  # ~ sqrt(1K x 2K): half way in log2
    assert between == pytest.approx((260 + 298) / 2 / 370, rel=1e-3)


def test_fp8_casts_are_a_memory_bound_term_only_under_fp8():
    catalog = load_catalog()
    model = get_preset("llama3-8b")
    times = {}
    for precision in (Precision.BF16, Precision.FP8):
        e = estimate(
            model,
            "h100-sxm",
            Layout(dp_shard=8),
            TrainingConfig(seq_len=4096, precision=precision),
            num_gpus=8,
            catalog=catalog,
        )
        times[precision] = e.time.breakdown_s
    assert times[Precision.FP8].matmul < times[Precision.BF16].matmul
    assert times[Precision.FP8].memory_bound > times[Precision.BF16].memory_bound
    assert np.isfinite(times[Precision.FP8].memory_bound)


def test_flashattention2_on_blackwell_is_its_measured_rate_not_a_peak_fraction():
    """PyTorch's FlashAttention-2 on B200 / GB200 runs at about Hopper's speed (cudnn-frontend's
    artifacts: 394 and 430 TFLOP/s causal at 16K), half of attention_peak_fraction x peak."""
    catalog = load_catalog()
    fa2 = DEFAULT_SETTINGS.but(cudnn_attention=False)
    for gpu_id, causal_16k in (("b200", 394.495e12), ("gb200", 430e12)):
        gpu = catalog.gpu(gpu_id)
        c = single(gpu, Layout(dp_shard=1), TrainingConfig(seq_len=16384), gpus_per_node=8, network_bandwidth=50e9)
        fwd = rates.attention_rates(c, fa2, 128)[0][0]
        assert fwd == pytest.approx(causal_16k, rel=1e-3)
        assert fwd < 0.6 * gpu.peak_flops("bf16") * fa2.attention_peak_fraction


def test_fp8_forward_gemms_use_fast_accumulation_on_hopper_only():
    """The FP8 recipes' forward GEMMs run with fast accumulation where the GPU has the mode
    (Hopper), the backward GEMMs at the catalog's split-accumulator rate: with no recompute the
    block GEMM time is (1 / speedup + 2) / 3 of the same job at speedup 1; Blackwell, bf16 and
    the LM head (16-bit) do not change."""
    catalog = load_catalog()
    assert catalog.gpu("h100-sxm").fp8_fast_accumulation and catalog.gpu("h200-sxm").fp8_fast_accumulation
    assert not any(catalog.gpu(g).fp8_fast_accumulation for g in ("b200", "gb200", "a100-80gb-sxm", "mi300x"))
    model = get_preset("llama3-8b")
    slow = DEFAULT_SETTINGS.but(fp8_fast_accum_forward_speedup=1.0)
    fast = DEFAULT_SETTINGS.but(fp8_fast_accum_forward_speedup=1.25)

    def matmul(gpu_id: str, precision: Precision, settings) -> float:
        e = estimate(
            model,
            gpu_id,
            Layout(dp_shard=8),
            TrainingConfig(seq_len=4096, precision=precision),
            num_gpus=8,
            catalog=catalog,
            settings=settings,
        )
        return e.time.breakdown_s.matmul

    hopper_slow, hopper_fast = matmul("h100-sxm", Precision.FP8, slow), matmul("h100-sxm", Precision.FP8, fast)
    # With an unbounded speedup only the backward's 2 of 3 block passes (and the head) are left.
    backward_only = matmul("h100-sxm", Precision.FP8, DEFAULT_SETTINGS.but(fp8_fast_accum_forward_speedup=1e12))
    blocks = 3.0 * (hopper_slow - backward_only)
    assert blocks > 0 and hopper_slow - hopper_fast == pytest.approx(blocks * (1.0 - 1.0 / 1.25) / 3.0, rel=1e-6)
    assert matmul("b200", Precision.FP8, fast) == matmul("b200", Precision.FP8, slow)
    assert matmul("h100-sxm", Precision.BF16, fast) == matmul("h100-sxm", Precision.BF16, slow)

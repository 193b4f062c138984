"""Hardware catalog: data checked against the shared reference CSVs, loader validation, detection."""

from __future__ import annotations

import csv
import json
import re
import statistics
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest
from support import REPO, SHARED

from planner.catalog.detect import NO_DRIVER_MESSAGE, NoGPUDriver, detect_gpus, match_gpu_name
from planner.catalog.hardware import (
    BUILTIN_DIR,
    GIB,
    CatalogError,
    load_catalog,
    usable_memory_gib,
)
from planner.catalog.prices import MEDIAN_SOURCE_PREFIX, offers_of
from planner.layout import Precision

REFERENCE = SHARED / "reference"
needs_reference = pytest.mark.skipif(
    not (REFERENCE / "gpu_specs.csv").exists(), reason="../shared/reference (gpu_specs.csv) is not available"
)

REQUIRED_IDS = [
    "a10",
    "a30",
    "l4",
    "l40",
    "l40s",
    "a100-40gb-sxm",
    "a100-80gb-sxm",
    "a100-80gb-pcie",
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200-sxm",
    "h200-nvl",
    "b200",
    "gb200",
    "mi250x",
    "mi300x",
    "mi325x",
]
CSV_ROW = {
    "a10": "NVIDIA A10",
    "a30": "NVIDIA A30 24GB",
    "l4": "NVIDIA L4",
    "l40": "NVIDIA L40 48GB",
    "l40s": "NVIDIA L40S",
    "a100-40gb-sxm": "NVIDIA A100 40GB SXM",
    "a100-80gb-sxm": "NVIDIA A100 80GB SXM",
    "a100-80gb-pcie": "NVIDIA A100 80GB PCIe",
    "h100-sxm": "NVIDIA H100 80GB SXM",
    "h100-pcie": "NVIDIA H100 PCIe 80GB",
    "h100-nvl": "NVIDIA H100 NVL 94GB",
    "h200-sxm": "NVIDIA H200 SXM 141GB",
    "h200-nvl": "NVIDIA H200 NVL 141GB",
    "b200": "NVIDIA B200 (HGX B200)",
    "gb200": "NVIDIA GB200 (per Blackwell GPU, NVL72)",
    "mi250x": "AMD Instinct MI250X",
    "mi300x": "AMD Instinct MI300X",
    "mi325x": "AMD Instinct MI325X",
}
PRICE_GPU = {  # gpu_cloud_prices.csv "gpu" column -> catalog id
    "A100 SXM 40GB": "a100-40gb-sxm",
    "A100 SXM 80GB": "a100-80gb-sxm",
    "A100 (80GB class)": "a100-80gb-sxm",
    "A100 PCIe 80GB": "a100-80gb-pcie",
    "H100 SXM 80GB": "h100-sxm",
    "H100 80GB": "h100-sxm",
    "H100 NVL 94GB": "h100-nvl",
    "H100 PCIe 80GB": "h100-pcie",
    "H200 141GB": "h200-sxm",
    "B200 180GB": "b200",
    "A10 24GB": "a10",
    "L40S 48GB": "l40s",
    "L40 48GB": "l40",
}
DATE = re.compile(r"20\d\d-\d\d")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _csv_rows(name: str) -> list[dict[str, str]]:
    with open(REFERENCE / name, newline="") as handle:
        return list(csv.DictReader(handle))


# ----------------------------------------------------------------------------- the data


def test_all_required_gpus_present_and_resolvable(catalog):
    assert set(REQUIRED_IDS) <= set(catalog.gpus)
    for gpu_id in REQUIRED_IDS:
        gpu = catalog.gpu(gpu_id)
        node, network = catalog.node(gpu.default_node), catalog.network(gpu.default_network)
        assert gpu.id == gpu_id and node.scaleup_domain_size == gpu.scaleup_domain_size
        # the GPU's typical internode rate is the one of its default network, so the two never disagree
        assert gpu.internode_bandwidth_bytes_per_s == network.bandwidth_bytes_per_s_per_gpu


def test_every_number_has_a_dated_source():
    for path in sorted(BUILTIN_DIR.glob("*/*.toml")):
        if path.parent.name == "prices":
            continue  # each offer carries its own date and source (tests/planner/test_prices.py)
        raw = tomllib.loads(path.read_text())
        numbers = {k for k, v in raw.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        assert numbers <= set(raw["sources"]), f"{path.name}: unsourced {numbers - set(raw['sources'])}"
        for field, text in raw["sources"].items():
            assert DATE.search(text), f"{path.name}: sources.{field} has no date"


def test_flops_are_dense_not_sparse(catalog):
    h100 = catalog.gpu("h100-sxm")
    assert h100.peak_flops("bf16") == pytest.approx(989.4e12)
    assert h100.peak_flops(Precision.FP8) == pytest.approx(1978.9e12)
    assert catalog.gpu("b200").peak_flops("bf16") == pytest.approx(2250e12)  # vendor prints 4.5 PF sparse
    assert catalog.gpu("l4").peak_flops("bf16") == pytest.approx(121e12)  # datasheet prints 242*
    for gpu in catalog.gpus.values():
        flops = gpu.peak_flops_per_s
        # a sparse number in one column and a dense one in another breaks these fixed ratios
        if "fp8" in flops:
            assert flops["fp8"] / flops["bf16"] == pytest.approx(2, rel=0.03), gpu.id
        if "tf32" in flops:
            assert flops["tf32"] / flops["bf16"] == pytest.approx(0.5, rel=0.03), gpu.id


def test_unsupported_precision_is_an_error(catalog):
    for gpu_id, missing in [("a100-80gb-sxm", "fp8"), ("a10", "fp8"), ("mi250x", "tf32")]:
        with pytest.raises(ValueError, match=f"^{gpu_id} has no dense {missing} tensor throughput$"):
            catalog.gpu(gpu_id).peak_flops(missing)


@needs_reference
def test_numbers_agree_with_reference_csv(catalog):
    rows = {row["name"]: row for row in _csv_rows("gpu_specs.csv")}
    for gpu_id, row_name in CSV_ROW.items():
        gpu, row = catalog.gpu(gpu_id), rows[row_name]
        per = 2 if gpu_id == "mi250x" else 1  # one catalog GPU = one GCD of the 2-GCD package
        label = float(row["memory_gb_vendor_label"]) / per
        usable = usable_memory_gib(label, gddr_ecc="GDDR" in row["memory_type"])
        assert gpu.memory_bytes / GIB == pytest.approx(usable, abs=0.006), gpu_id
        assert gpu.hbm_bandwidth_bytes_per_s == pytest.approx(float(row["memory_bandwidth_TBps"]) * 1e12 / per)
        for key, column in [
            ("bf16", "dense_bf16_tflops"),
            ("fp16", "dense_fp16_tflops"),
            ("fp8", "dense_fp8_tflops"),
            ("tf32", "dense_tf32_tflops"),
            ("fp32", "fp32_tflops_non_tensor"),
        ]:
            expected = float(row[column]) * 1e12 / per if row[column] else None
            assert gpu.peak_flops_per_s.get(key) == pytest.approx(expected), (gpu_id, key)
        assert gpu.scaleup_domain_size == int(row["max_gpus_per_scaleup_domain"]) * per
        assert gpu.scaleup_bandwidth_bytes_per_s == pytest.approx(
            float(row["intra_node_bw_unidir_GBps_per_gpu"]) * 1e9 / per
        )
        pcie_per_gpu = float(row["pcie_bw_bidir_GBps"]) * 1e9 / 2  # MI250X: one x16 link per GCD
        assert gpu.pcie_bandwidth_bytes_per_s == pytest.approx(pcie_per_gpu)
        assert gpu.tdp_watts == pytest.approx(float(row["tdp_w"]) / per)
        if row["typical_internode_Gbps_per_gpu"]:
            assert gpu.internode_bandwidth_bytes_per_s == pytest.approx(
                float(row["typical_internode_Gbps_per_gpu"]) * 1e9 / 8
            )


def _reference_prices() -> dict[str, float]:
    """The documented rule: one on-demand rate per provider (its largest instance), median per GPU."""
    per_provider: dict[tuple[str, str], dict[str, str]] = {}
    for row in _csv_rows("gpu_cloud_prices.csv"):
        basis = row["pricing_basis"]
        if not row["usd_per_gpu_hour"] or not basis.startswith("on-demand") or "equivalent" in basis:
            continue
        key = (PRICE_GPU[row["gpu"]], row["provider"])
        if key not in per_provider or int(row["gpus_per_instance"]) > int(per_provider[key]["gpus_per_instance"]):
            per_provider[key] = row
    by_gpu: dict[str, list[float]] = {}
    for (gpu_id, _), row in per_provider.items():
        by_gpu.setdefault(gpu_id, []).append(float(row["usd_per_gpu_hour"]))
    return {gpu_id: statistics.median(values) for gpu_id, values in by_gpu.items()}


@needs_reference
def test_prices_follow_the_documented_rule(catalog):
    reference = _reference_prices()
    assert reference["h100-sxm"] == pytest.approx(5.0725)  # six providers; GCP's 1g shape is not on-demand
    for gpu in catalog.gpus.values():
        source = gpu.sources["price_usd_per_gpu_hour"]
        if gpu.id in reference:
            assert gpu.price_per_gpu_hour_usd == pytest.approx(reference[gpu.id], abs=0.006), gpu.id
            assert "ESTIMATE" not in source
        elif len(offers_of(gpu, "on-demand")) >= 2:  # a median of hw_catalog/prices's own offers (MI300X)
            assert source.startswith(MEDIAN_SOURCE_PREFIX), gpu.id  # its value: test_prices.py
        else:
            assert source.startswith("ESTIMATE"), f"{gpu.id}: a price without a CSV rate must say it is an estimate"


# Purchase prices: no reference file has them, so each is a dated ESTIMATE under one convention (docs/hardware.md).
PURCHASE_CONVENTION = "ESTIMATE: per GPU incl. its share of server and scale-out network, excl. facility/support; "


def test_every_gpu_has_a_sourced_purchase_price(catalog):
    for gpu in catalog.gpus.values():
        assert gpu.purchase_price_usd is not None and gpu.purchase_price_usd > 0, gpu.id
        source = gpu.sources["purchase_price_usd"]
        assert source.startswith(PURCHASE_CONVENTION), f"{gpu.id}: purchase price must state the convention"
        cited = re.sub(r"; read 20\d\d-\d\d-\d\d$", "", source)
        assert cited != source and re.search(r"20\d\d|undated", cited), f"{gpu.id}: say when the cited page is from"


def test_purchase_prices_rank_like_the_parts(catalog):
    usd = {gpu.id: gpu.purchase_price_usd for gpu in catalog.gpus.values()}
    assert usd["b200"] > usd["h200-sxm"] >= usd["h100-sxm"] > usd["a100-80gb-sxm"] > usd["a100-40gb-sxm"]
    assert usd["l4"] < usd["l40s"] and usd["mi300x"] < usd["mi325x"] < usd["mi350x"] < usd["mi355x"]
    # same chip: an NVSwitch server on a 400G fabric costs more per GPU than a card in a plain PCIe server
    assert usd["h100-pcie"] < usd["h100-sxm"] and usd["a100-80gb-pcie"] < usd["a100-80gb-sxm"]
    assert usd["h200-nvl"] < usd["h200-sxm"]


def test_purchase_price_pays_back_within_years_of_on_demand_rent(catalog):
    # catches a slipped digit: owning breaks even against on-demand rent after months, not days or decades
    for gpu in catalog.gpus.values():
        months = gpu.purchase_price_usd / gpu.price_per_gpu_hour_usd / 730
        assert 3 < months < 36, (gpu.id, round(months, 1))


def test_purchase_price_is_optional_but_sourced_when_given(tmp_path):
    _user_gpu(tmp_path, "no-price", purchase_price_usd=None)
    assert load_catalog([tmp_path]).gpu("no-price").purchase_price_usd is None
    path = _user_gpu(tmp_path, "unsourced", purchase_price_usd=30_000)
    entry = tomllib.loads(path.read_text())
    del entry["sources"]["purchase_price_usd"]
    path.write_text(_dump(entry))
    with pytest.raises(CatalogError, match=r"unsourced.toml: field 'sources.purchase_price_usd': missing"):
        load_catalog([tmp_path])


def test_usable_capacity_rule_matches_calibration():
    assert usable_memory_gib(141) == pytest.approx(139.80, abs=0.005)  # H200 as PyTorch saw it
    assert usable_memory_gib(24, gddr_ecc=True) < 23034 / 1024  # below the NVML total of an L4


# ----------------------------------------------------------------------------- loader behaviour


def test_si_conversion(catalog):
    h200 = catalog.gpu("h200-sxm")
    assert h200.memory_bytes == round(139.80 * GIB)
    assert h200.hbm_bandwidth_bytes_per_s == pytest.approx(4.8e12)
    assert h200.peak_flops_per_s["bf16"] == pytest.approx(989.4e12)
    assert h200.scaleup_bandwidth_bytes_per_s == pytest.approx(450e9)
    assert h200.internode_bandwidth_bytes_per_s == pytest.approx(50e9)  # 400 Gb/s
    assert h200.pcie_bandwidth_bytes_per_s == pytest.approx(64e9)
    assert h200.tdp_watts == 700 and isinstance(h200.purchase_price_usd, float)
    network = catalog.network("eth-100g")
    assert network.bandwidth_bytes_per_s_per_gpu == pytest.approx(25e9 / 8)


def test_node_templates_map_scaleup_domains(catalog):
    nvl72, pairs = catalog.node("nvl72"), catalog.node("pcie-8-nvlink-pairs")
    assert (nvl72.gpus_per_node, nvl72.nodes_per_scaleup_domain, nvl72.scaleup_domains_per_node) == (4, 18, 1)
    assert (pairs.scaleup_domains_per_node, pairs.nodes_per_scaleup_domain) == (4, 1)
    assert catalog.node("frontier-4x-mi250x").gpus_per_node == 8  # GCDs, like the mi250x entry


def test_default_catalog_is_cached(catalog):
    assert load_catalog() is catalog and load_catalog([]) is catalog


def test_unknown_ids_suggest_close_matches(catalog):
    with pytest.raises(ValueError, match=r"unknown GPU 'h100'; did you mean .*h100-sxm"):
        catalog.gpu("h100")
    # An id that starts with what was typed comes first (trial s24: 'a800' missed a800-80gb-sxm).
    with pytest.raises(ValueError, match=r"unknown GPU 'a800'; did you mean a800-80gb-sxm, "):
        catalog.gpu("a800")
    with pytest.raises(ValueError, match=r"unknown GPU 'h800-sxm'; did you mean h800, "):
        catalog.gpu("h800-sxm")
    with pytest.raises(ValueError, match="unknown network 'ib'"):
        catalog.network("ib")
    assert catalog.gpu("H200-SXM").id == "h200-sxm"


def test_with_price_overrides_and_keeps_original(catalog):
    h100 = catalog.gpu("h100-sxm")
    cheap = h100.with_price(2.5)
    assert cheap.price_per_gpu_hour_usd == 2.5 and cheap.sources["price_usd_per_gpu_hour"] == "user override"
    assert h100.price_per_gpu_hour_usd == pytest.approx(5.07)
    with pytest.raises(ValueError, match="positive"):
        h100.with_price(-1)


def test_loading_does_not_import_torch():
    code = "import sys, planner.catalog.hardware as h; h.load_catalog(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _dump(entry: dict) -> str:
    """Minimal TOML writer for flat catalog entries (JSON strings are valid TOML basic strings)."""

    def line(key, value):
        return f"{key} = {json.dumps(value)}"

    body = [line(k, v) for k, v in entry.items() if k != "sources"]
    return "\n".join(body + ["", "[sources]"] + [line(k, v) for k, v in entry.get("sources", {}).items()]) + "\n"


def _user_gpu(tmp_path: Path, gpu_id: str = "my-gpu", **changes) -> Path:
    """Write a copy of the h100-sxm entry under a new id into a user dir; None removes a field."""
    entry = tomllib.loads((BUILTIN_DIR / "gpus" / "h100-sxm.toml").read_text())
    entry["id"] = gpu_id
    for key, value in changes.items():
        if value is None:
            entry.pop(key, None)
            entry["sources"].pop(key, None)
        else:
            entry[key] = value
    (tmp_path / "gpus").mkdir(exist_ok=True)
    path = tmp_path / "gpus" / f"{gpu_id}.toml"
    path.write_text(_dump(entry))
    return path


def test_user_dir_adds_and_overrides(tmp_path, catalog):
    _user_gpu(tmp_path, "my-gpu", name="Lab H100", memory_gib=80.0, price_usd_per_gpu_hour=1.5)
    _user_gpu(tmp_path, "h100-sxm", price_usd_per_gpu_hour=2.0)
    merged = load_catalog([tmp_path])
    assert merged.gpu("my-gpu").memory_bytes == 80 * GIB
    assert merged.gpu("h100-sxm").price_per_gpu_hour_usd == 2.0
    assert catalog.gpu("h100-sxm").price_per_gpu_hour_usd == pytest.approx(5.07)  # built-in cache untouched
    assert len(merged.gpus) == len(catalog.gpus) + 1


@pytest.mark.parametrize("field", ["device_name", "torch_device_name"])
def test_a_device_name_needs_a_source(tmp_path, field):
    """The name a device reports is a fact read somewhere, as a number is (trainer/cluster.py selects
    Kubernetes nodes by it, the probe matches the torch one): a file that states one without a source
    is refused."""
    path = _user_gpu(tmp_path, torch_device_name="NVIDIA H100 80GB HBM3")
    entry = tomllib.loads(path.read_text())
    entry["sources"]["torch_device_name"] = "a test, read 2026-12-07"
    del entry["sources"][field]
    path.write_text(_dump(entry))
    with pytest.raises(CatalogError, match=rf"'sources.{field}': missing \(every device name needs a source"):
        load_catalog([tmp_path])


@pytest.mark.parametrize(
    "changes, field, detail",
    [
        ({"memory_gib": None}, "memory_gib", "missing"),
        ({"memory_gib": "eighty"}, "memory_gib", "expected a number in (1, 2048], got 'eighty'"),
        ({"memory_gib": -3}, "memory_gib", "expected a number in (1, 2048], got -3"),
        ({"scaleup_domain_size": 8.5}, "scaleup_domain_size", "expected an integer"),
        ({"scaleup_kind": "nvlink"}, "scaleup_kind", "expected one of"),
        ({"memory_gb": 80}, "memory_gb", "unknown field (did you mean 'memory_gib'?)"),
        ({"hbm_bandwidth_tbps": 0}, "hbm_bandwidth_tbps", "expected a number in (0, 100]"),
        ({"tf32_tflops": 1978.9}, "tf32_tflops", "expected at most the 16-bit rate"),
        ({"fp8_tflops": 500.0}, "fp8_tflops", "expected at least the 16-bit rate"),
        ({"default_node": "hgx-16"}, "default_node", "unknown node 'hgx-16'"),
        ({"default_node": "pcie-8"}, "scaleup_domain_size", "disagrees with default_node"),
        ({"id": "other"}, "id", "must equal the file name"),
        ({"sources": {"memory_gib": "S5"}}, "sources.hbm_bandwidth_tbps", "missing (every number needs a source"),
        ({"purchase_price_usd": -5}, "purchase_price_usd", "expected a number in (0, 1e+07], got -5"),
    ],
)
def test_bad_gpu_file_names_file_and_field(tmp_path, changes, field, detail):
    path = _user_gpu(tmp_path)
    entry = tomllib.loads(path.read_text())
    entry.update(changes)
    for key, value in changes.items():
        if value is None:
            del entry[key]
    path.write_text(_dump(entry))
    with pytest.raises(CatalogError) as caught:
        load_catalog([tmp_path])
    message = str(caught.value)
    assert message.startswith(f"{path}: field '{field}': ")
    assert detail in message and "\n" not in message


@pytest.mark.parametrize(
    "key, value, detail",
    [
        ("latency_us", -1, "expected a number in (0, 10000], got -1"),
        ("kind", "token-ring", "expected one of infiniband"),
    ],
)
def test_network_fields_the_model_does_not_read_are_still_checked(tmp_path, key, value, detail):
    entry = tomllib.loads((BUILTIN_DIR / "networks" / "eth-100g.toml").read_text())
    entry[key] = value
    (tmp_path / "networks").mkdir()
    path = tmp_path / "networks" / "eth-100g.toml"
    path.write_text(_dump(entry))
    with pytest.raises(CatalogError) as caught:
        load_catalog([tmp_path])
    assert str(caught.value).startswith(f"{path}: field '{key}': ") and detail in str(caught.value)


def test_bad_toml_and_missing_dir(tmp_path):
    (tmp_path / "networks").mkdir()
    (tmp_path / "networks" / "lan.toml").write_text("id = lan\n")
    with pytest.raises(CatalogError, match=r"lan.toml: invalid TOML"):
        load_catalog([tmp_path])
    with pytest.raises(CatalogError, match="does not exist"):
        load_catalog([tmp_path / "nope"])


# ----------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    "name, memory_mib, expected",
    [
        ("NVIDIA H200", 143_771, "h200-sxm"),  # NVML total from the calibration run
        ("NVIDIA H100 80GB HBM3", 81_559, "h100-sxm"),
        ("NVIDIA A100-SXM4-40GB", 40_960, "a100-40gb-sxm"),
        ("NVIDIA A100-SXM4-80GB", 81_920, "a100-80gb-sxm"),
        ("NVIDIA A100 80GB PCIe", 81_920, "a100-80gb-pcie"),
        ("NVIDIA H100 NVL", 95_830, "h100-nvl"),
        ("NVIDIA H100 PCIe", 81_559, "h100-pcie"),
        ("NVIDIA H200 NVL", 143_771, "h200-nvl"),
        ("NVIDIA L40S", 46_068, "l40s"),
        ("NVIDIA L40", 46_068, "l40"),
        ("NVIDIA L4", 23_034, "l4"),
        ("NVIDIA A10", 23_028, "a10"),
        ("NVIDIA A10G", 23_028, None),  # AWS SKU, not the A10 datasheet part
        ("NVIDIA H100 80GB HBM3", 65_536, None),  # unlisted 64 GB variant: no borrowed numbers
        ("NVIDIA GeForce RTX 4090", 24_564, "rtx-4090"),  # listed since issue 27 (was None before)
    ],
)
def test_match_gpu_name(catalog, name, memory_mib, expected):
    spec = match_gpu_name(name, memory_mib * 2**20, catalog)
    assert (spec.id if spec else None) == expected


def test_detect_without_driver_raises(monkeypatch, catalog):
    pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py (the [train] extra) is not installed")

    def fail():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", fail)
    with pytest.raises(NoGPUDriver) as caught:
        detect_gpus(catalog)
    assert str(caught.value) == NO_DRIVER_MESSAGE


def test_detect_without_pynvml_raises(monkeypatch, catalog):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(NoGPUDriver, match="pynvml"):
        detect_gpus(catalog)


def test_detect_with_fake_nvml(monkeypatch, catalog):
    calls = []
    fake = types.SimpleNamespace(
        NVMLError=RuntimeError,
        nvmlInit=lambda: calls.append("init"),
        nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlSystemGetDriverVersion=lambda: b"580.159.04",
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: ["NVIDIA H200", "NVIDIA A10G"][h],
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=[143_771, 23_028][h] * 2**20),
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    found = detect_gpus(catalog)
    assert [(g.index, g.name, g.driver_version) for g in found] == [
        (0, "NVIDIA H200", "580.159.04"),
        (1, "NVIDIA A10G", "580.159.04"),
    ]
    assert found[0].spec.id == "h200-sxm" and found[1].spec is None
    assert calls == ["init", "shutdown"]


def test_every_catalog_file_is_package_data():
    """A wheel carries hw_catalog/*/*.toml only if pyproject lists each folder as a package with
    *.toml data: a new catalog folder must be added there."""
    import fnmatch
    import tomllib

    root = REPO
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    for path in (root / "hw_catalog").rglob("*.toml"):
        package = ".".join(path.parent.relative_to(root).parts)
        assert package in setuptools["packages"], f"{package} is not listed in [tool.setuptools] packages"
        patterns = setuptools["package-data"].get(package, [])
        assert any(fnmatch.fnmatch(path.name, p) for p in patterns), f"{path} is not package data"


# ----------------------------------------------------------------------------- rented parts added for issue 27

# The datasheet figures each new entry was built from (sources in its file): label GB and memory rule,
# bandwidth TB/s, dense TFLOP/s (None: unsupported), per-direction scale-up GB/s and domain, TDP W,
# compute capability, and the node / network templates it runs in.
NEW_GPUS = {
    "h800": dict(
        label=80,
        gddr=False,
        hbm=3.35,
        bf16=989.4,
        fp8=1978.9,
        tf32=494.7,
        fp32=66.9,
        scaleup=200,
        domain=8,
        tdp=700,
        cc=(9, 0),
        node="hgx-8",
        network="ib-ndr-400",
    ),
    "a800-80gb-sxm": dict(
        label=80,
        gddr=False,
        hbm=2.039,
        bf16=312,
        fp8=None,
        tf32=156,
        fp32=19.5,
        scaleup=200,
        domain=8,
        tdp=400,
        cc=(8, 0),
        node="hgx-8",
        network="ib-hdr-200",
    ),
    "h20": dict(
        label=96,
        gddr=False,
        hbm=4.0,
        bf16=148,
        fp8=296,
        tf32=74,
        fp32=44,
        scaleup=450,
        domain=8,
        tdp=400,
        cc=(9, 0),
        node="hgx-8",
        network="ib-ndr-400",
    ),
    "l20": dict(
        label=48,
        gddr=True,
        hbm=0.864,
        bf16=119.5,
        fp8=239,
        tf32=59.8,
        fp32=59.8,
        scaleup=32,
        domain=1,
        tdp=275,
        cc=(8, 9),
        node="pcie-8",
        network="eth-100g",
    ),
    "rtx-4090": dict(
        label=None,
        gddr=False,
        hbm=1.008,
        bf16=165.2,
        fp8=330.3,
        tf32=82.6,
        fp32=82.6,
        scaleup=32,
        domain=1,
        tdp=450,
        cc=(8, 9),
        node="pcie-8",
        network="eth-100g",
    ),
    "b300": dict(
        label=270,
        gddr=False,
        hbm=7.7,
        bf16=2250,
        fp8=4500,
        tf32=1125,
        fp32=75,
        scaleup=900,
        domain=8,
        tdp=1100,
        cc=(10, 3),
        node="hgx-8",
        network="ib-ndr-400",
    ),
    "gb300": dict(
        label=279,
        gddr=False,
        hbm=8.0,
        bf16=2500,
        fp8=5000,
        tf32=1250,
        fp32=80,
        scaleup=900,
        domain=72,
        tdp=1400,
        cc=(10, 3),
        node="nvl72",
        network="ib-ndr-400",
    ),
}
# NVML total of a GeForce RTX 4090 (ECC off, no carve-out): 24,564 MiB, times the H200's NVML-to-PyTorch ratio.
RTX_4090_USABLE_GIB = round(24_564 / 1024 * 139.80 / 140.40, 2)


@pytest.mark.parametrize("gpu_id", sorted(NEW_GPUS))
def test_new_gpu_loads_with_its_datasheet_figures(catalog, gpu_id):
    want, gpu = NEW_GPUS[gpu_id], catalog.gpu(gpu_id)
    usable = RTX_4090_USABLE_GIB if want["label"] is None else usable_memory_gib(want["label"], gddr_ecc=want["gddr"])
    assert gpu.memory_bytes / GIB == pytest.approx(usable, abs=0.006)
    assert gpu.hbm_bandwidth_bytes_per_s == pytest.approx(want["hbm"] * 1e12)
    for key in ("bf16", "fp8", "tf32", "fp32"):
        expected = None if want[key] is None else want[key] * 1e12
        assert gpu.peak_flops_per_s.get(key) == pytest.approx(expected), key
    assert gpu.peak_flops_per_s["fp16"] == gpu.peak_flops_per_s["bf16"]
    assert gpu.scaleup_bandwidth_bytes_per_s == pytest.approx(want["scaleup"] * 1e9)
    assert gpu.scaleup_domain_size == want["domain"] and gpu.tdp_watts == want["tdp"]
    assert gpu.compute_capability == want["cc"] and gpu.vendor == "nvidia"
    assert (gpu.default_node, gpu.default_network) == (want["node"], want["network"])
    node, network = catalog.node(gpu.default_node), catalog.network(gpu.default_network)
    assert node.scaleup_domain_size == gpu.scaleup_domain_size
    assert gpu.internode_bandwidth_bytes_per_s == network.bandwidth_bytes_per_s_per_gpu


def test_export_parts_differ_from_their_full_parts_only_in_scaleup(catalog):
    """H800 and A800 are the H100 SXM and A100 80GB SXM with NVLink cut to 400 GB/s bidirectional:
    the cut is the point of the entries, and nothing else may drift from the full part."""
    for export_id, full_id in [("h800", "h100-sxm"), ("a800-80gb-sxm", "a100-80gb-sxm")]:
        export, full = catalog.gpu(export_id), catalog.gpu(full_id)
        assert export.scaleup_bandwidth_bytes_per_s == pytest.approx(200e9)  # 400 GB/s bidirectional
        assert export.scaleup_bandwidth_bytes_per_s < full.scaleup_bandwidth_bytes_per_s
        same = (
            "memory_bytes",
            "hbm_bandwidth_bytes_per_s",
            "peak_flops_per_s",
            "compute_capability",
            "scaleup_kind",
            "scaleup_domain_size",
            "tdp_watts",
            "default_node",
            "default_network",
        )
        for field in same:
            assert getattr(export, field) == getattr(full, field), (export_id, field)
        # same die and clocks: its achievable rates are the full part's, marked as estimates
        assert export.rates.gemm_flops_per_s == full.rates.gemm_flops_per_s
        assert set(export.rates.provenance.values()) == {"ESTIMATE"}
    # The H20 keeps the full NVLink 4 but has ~15 % of the H100's tensor throughput, with more HBM.
    h20, h100 = catalog.gpu("h20"), catalog.gpu("h100-sxm")
    assert h20.scaleup_bandwidth_bytes_per_s == h100.scaleup_bandwidth_bytes_per_s
    assert h20.peak_flops("bf16") < 0.16 * h100.peak_flops("bf16")
    assert h20.memory_bytes > h100.memory_bytes and h20.hbm_bandwidth_bytes_per_s > h100.hbm_bandwidth_bytes_per_s


def test_export_parts_scale_up_slower_in_the_model(catalog):
    """The reduced NVLink reaches the step time: the same FSDP layout on 8 H800s spends longer in
    data-parallel communication than on 8 H100s."""
    from planner.catalog.models import get_preset
    from planner.layout import Layout, TrainingConfig
    from planner.model.estimate import estimate

    model, training = get_preset("llama3-8b"), TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=1)
    dp_comm = {
        gpu_id: estimate(
            model, gpu_id, Layout(dp_shard=8), training, num_gpus=8, catalog=catalog
        ).time.breakdown_s.dp_comm
        for gpu_id in ("h100-sxm", "h800")
    }
    assert dp_comm["h800"] > dp_comm["h100-sxm"]


@pytest.mark.parametrize("gpu_id", sorted(NEW_GPUS))
def test_every_field_of_a_new_gpu_has_a_dated_source(gpu_id):
    raw = tomllib.loads((BUILTIN_DIR / "gpus" / f"{gpu_id}.toml").read_text())
    unsourced_ok = {"id", "name", "vendor", "default_node", "default_network", "sources"}
    for field in set(raw) - unsourced_ok:
        text = raw["sources"].get(field, "")
        assert text.strip(), f"{gpu_id}: field '{field}' has no source"
        assert re.search(r"20\d\d-\d\d-\d\d", text), f"{gpu_id}: sources.{field} has no read date"


def test_rtx_4090_states_geforce_fp32_accumulate_rates(catalog):
    """GeForce Ada runs 16-bit tensor math with FP32 accumulate at half the FP16-accumulate rate
    (Ada whitepaper v2.02, Appendix A: 165.2 vs 330.3 dense); training accumulates in FP32."""
    gpu = catalog.gpu("rtx-4090")
    assert gpu.peak_flops("bf16") == pytest.approx(165.2e12)  # not the 330.3 FP16-accumulate rate
    assert gpu.peak_flops("fp8") == pytest.approx(330.3e12)  # FP32 accumulate (v2.02 correction)
    assert gpu.scaleup_kind == "pcie" and gpu.memory_bytes < 24 * GIB


def test_blackwell_ultra_entries(catalog):
    b300, gb300, b200, gb200 = (catalog.gpu(g) for g in ("b300", "gb300", "b200", "gb200"))
    for ultra, base in [(b300, b200), (gb300, gb200)]:
        assert ultra.generation == "Blackwell" and ultra.compute_capability == (10, 3)
        assert not ultra.fp8_fast_accumulation  # Blackwell accumulates FP8 in FP32 at full rate
        assert ultra.peak_flops_per_s == base.peak_flops_per_s  # BF16/FP8 peaks as Blackwell's
        assert base.memory_bytes < ultra.memory_bytes < usable_memory_gib(288) * GIB  # below 288 GB physical
        assert ultra.tdp_watts > base.tdp_watts
    # GB300 NVL72 reuses the GB200 rack layout: 18 trays of 4 GPUs in one NVLink domain.
    node = catalog.node(gb300.default_node)
    assert (node.gpus_per_node, node.nodes_per_scaleup_domain) == (4, 18)
    assert gb300.rates.provenance["cudnn_attention_fwd_tflops_achieved"] == "PUBLISHED"


@pytest.mark.parametrize(
    "name, memory_mib, expected",
    [
        ("NVIDIA H800 80GB HBM3", 81_559, "h800"),
        ("NVIDIA H800 PCIe", 81_559, None),  # the PCIe H800 is not in the catalog
        ("NVIDIA A800-SXM4-80GB", 81_920, "a800-80gb-sxm"),
        ("NVIDIA A800 80GB PCIe", 81_920, None),
        ("NVIDIA H20", 97_871, "h20"),
        ("NVIDIA L20", 46_068, "l20"),
        ("NVIDIA GeForce RTX 4090", 24_564, "rtx-4090"),
        ("NVIDIA B300 SXM6 AC", 275_040, "b300"),  # nvidia-smi total on a B300 SXM6 AC
        ("NVIDIA GB300", 284_672, "gb300"),
    ],
)
def test_match_new_gpu_names(catalog, name, memory_mib, expected):
    spec = match_gpu_name(name, memory_mib * 2**20, catalog)
    assert (spec.id if spec else None) == expected


# every segment naming the part must be in the device name (planner/catalog/detect.py rule 1)
@pytest.mark.parametrize("name", ["NVIDIA GeForce RTX 3090", "NVIDIA RTX A5000"])
def test_other_24gb_rtx_cards_do_not_borrow_the_4090(catalog, name):
    assert match_gpu_name(name, 24_564 * 2**20, catalog) is None


@pytest.mark.parametrize(("gpu_id", "clock_ghz", "tdp"), [("mi355x", 2.4, 1400), ("mi350x", 2.2, 1000)])
def test_cdna4_dense_peaks_follow_their_derivation(catalog, gpu_id, clock_ghz, tdp):
    """MI355X / MI350X: 8 XCDs x 32 CUs, FP8 8,192 and BF16 4,096 dense FLOPs per CU per clock
    (ISSCC 2026; S12), at the peak engine clock; 288 GB HBM3e by the HBM rule, 8 TB/s, 7 Infinity
    Fabric links of 76.5 GB/s per direction, on the 8-GPU OAM node (docs/hardware.md)."""
    gpu = catalog.gpu(gpu_id)
    cus = 8 * 32
    assert gpu.peak_flops("fp8") == pytest.approx(cus * 8192 * clock_ghz * 1e9, rel=1e-4)
    assert gpu.peak_flops("bf16") == pytest.approx(cus * 4096 * clock_ghz * 1e9, rel=1e-4)
    assert gpu.peak_flops("fp16") == gpu.peak_flops("bf16")
    assert gpu.peak_flops("fp32") == pytest.approx(cus * 256 * clock_ghz * 1e9, rel=1e-3)
    assert "tf32" not in gpu.peak_flops_per_s  # no TF32 figure published for CDNA 4
    assert gpu.memory_bytes == round(usable_memory_gib(288) * GIB)
    assert gpu.hbm_bandwidth_bytes_per_s == pytest.approx(8e12)
    assert gpu.scaleup_bandwidth_bytes_per_s == pytest.approx(7 * 76.5e9)
    assert gpu.tdp_watts == tdp and gpu.generation == "CDNA4" and gpu.compute_capability is None
    assert gpu.default_node == "amd-oam-8" and gpu.default_network == "roce-400g"
    assert gpu.rates.gemm_flops_per_s["bf16"] < gpu.peak_flops("bf16")
    # no dated public offer: the B200's price scaled by dense bf16 (docs/hardware.md "Prices")
    b200 = catalog.gpu("b200")
    assert gpu.sources["price_usd_per_gpu_hour"].startswith("ESTIMATE: the B200's")
    expected = b200.price_per_gpu_hour_usd * gpu.peak_flops("bf16") / b200.peak_flops("bf16")
    assert gpu.price_per_gpu_hour_usd == pytest.approx(expected, abs=0.005)

"""Calibration files: rates measured on the user's own GPUs (``trainplan calibrate``), merged over
the catalog entries they name (``--calibration FILE`` on plan, estimate and explain).

Format (TOML; the achievable-rate fields of docs/hardware.md, in the same units)::

    [machine]
    host = "node-17"
    device = "NVIDIA H200"
    driver = "570.86.15"
    date = "2026-12-01"
    software = "torch 2.11.0+cu130"

    [gpus.h200-sxm]
    gemm_bf16_tflops_achieved = 751.2
    attention_fwd_tflops_achieved = 352.0
    attention_bwd_tflops_achieved = 301.4
    hbm_copy_tbps_achieved = 4.27

Every value becomes a MEASURED rate sourced with the machine, driver and date; the catalog's own
checks apply (at most the datasheet figure). No torch here: the measuring lives in trainer/.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from planner.catalog.hardware import Catalog, with_rates
from planner.errors import CatalogError

MACHINE_FIELDS = ("host", "device", "driver", "date", "software")


def _table(raw: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = raw.get(key)
    if not isinstance(value, dict):
        raise CatalogError(f"{where}: table [{key}]: missing or not a table")
    return value


def read_calibration(path: Path) -> tuple[dict[str, str], dict[str, dict[str, float]]]:
    """(machine, {gpu id: {rate field: value}}) from a calibration file; CatalogError when malformed."""
    where = str(path)
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"{where}: cannot read calibration file ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{where}: invalid TOML: {exc}") from None
    unknown = set(raw) - {"machine", "gpus"}
    if unknown:
        raise CatalogError(f"{where}: unknown table(s) {', '.join(sorted(unknown))} (expected [machine], [gpus.<id>])")
    machine = _table(raw, "machine", where)
    for name in MACHINE_FIELDS:
        if not isinstance(machine.get(name), str) or not machine[name].strip():
            raise CatalogError(f"{where}: field 'machine.{name}': expected a non-empty string")
    gpus = _table(raw, "gpus", where)
    if not gpus:
        raise CatalogError(f"{where}: no [gpus.<id>] table")
    for gpu_id, values in gpus.items():
        if not isinstance(values, dict) or not values:
            raise CatalogError(f"{where}: table [gpus.{gpu_id}]: expected rate fields")
    return {k: machine[k] for k in MACHINE_FIELDS}, gpus


def apply_calibration(catalog: Catalog, path: Path) -> Catalog:
    """The catalog with each named GPU's rates replaced by the file's measurements."""
    machine, gpus = read_calibration(path)
    source = (
        f"MEASURED: trainplan calibrate on {machine['host']} ({machine['device']}, driver {machine['driver']},"
        f" {machine['software']}), {machine['date']}; file {Path(path).name}"
    )
    updated = dict(catalog.gpus)
    for gpu_id, values in gpus.items():
        try:
            gpu = catalog.gpu(gpu_id)
        except ValueError as exc:
            raise CatalogError(f"{path}: table [gpus.{gpu_id}]: {exc}") from None
        updated[gpu.id] = with_rates(gpu, values, source, f"{path} [gpus.{gpu_id}]")
    return catalog.model_copy(update={"gpus": updated})


def write_calibration(path: Path, machine: dict[str, str], gpus: dict[str, dict[str, float]]) -> Path:
    """Write the file (flat TOML: strings and numbers only)."""

    def quote(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = ["[machine]", *(f"{k} = {quote(machine[k])}" for k in MACHINE_FIELDS)]
    for gpu_id, values in gpus.items():
        lines += ["", f"[gpus.{gpu_id}]", *(f"{k} = {float(v):.6g}" for k, v in values.items())]
    path = Path(path)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path

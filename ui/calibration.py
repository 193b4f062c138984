"""``trainplan calibrate``: measure this machine's kernel rates into a calibration file, and
read one back into the catalog for ``--calibration``."""

from __future__ import annotations

from pathlib import Path

from ui import render


def run_calibration(gpu: str | None, device: str, quick: bool, out: Path) -> None:
    """Measure GEMM, attention and copy rates on ``device`` (auto, cpu, cuda) and write ``out``."""
    import torch

    from planner.catalog.calibration import apply_calibration, write_calibration
    from planner.catalog.hardware import load_catalog
    from trainer.calibrate import machine_info, measure

    use_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    if use_cuda and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available")
    gpu_id, driver = _calibration_target(gpu, use_cuda)
    load_catalog().gpu(gpu_id)  # an unknown id fails before anything is measured
    target = torch.device("cuda" if use_cuda else "cpu")
    values = measure(target, quick, render.progress_line)
    path = write_calibration(out, machine_info(target, driver), {gpu_id: values})
    apply_calibration(load_catalog(), path)  # the file must load back as it will be used
    render.calibrated(path, gpu_id, values)


def _calibration_target(gpu: str | None, use_cuda: bool) -> tuple[str, str | None]:
    """The catalog id and driver of the device measured: --gpu, else NVML's match on CUDA."""
    if not use_cuda:
        if gpu is None:
            raise ValueError("--gpu: needed on CPU (the catalog entry the measurements are written for)")
        return gpu, None
    from planner.catalog.detect import NoGPUDriver, detect_gpus
    from planner.catalog.hardware import load_catalog

    try:
        found = detect_gpus(load_catalog())
    except NoGPUDriver:
        found = []
    driver = found[0].driver_version if found else None
    matched = gpu or (found[0].spec.id if found and found[0].spec else None)
    if matched is None:
        raise ValueError("--gpu: this GPU matches no catalog entry; name the entry to write the rates for")
    return matched, driver


def calibrated_catalog(calibration: Path | None):
    """The catalog, with a calibration file's measured rates when one is given."""
    from planner.catalog.hardware import load_catalog

    if calibration is None:
        return None
    from planner.catalog.calibration import apply_calibration

    return apply_calibration(load_catalog(), calibration)

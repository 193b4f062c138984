"""Collect bench/gpu_validate.sh results: predicted vs measured, native vs stock HF + FSDP2.

Writes summary.json and summary.md beside the per-model folders and prints the table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def load(path: Path) -> dict | None:
    """A JSON file, or the last line of a file that ends in one JSON object (hf.json)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for candidate in (text, text.strip().splitlines()[-1] if text.strip() else ""):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def error_pct(predicted, measured):
    if predicted is None or measured in (None, 0):
        return None
    return 100.0 * (predicted - measured) / measured


def row_for(model_dir: Path) -> dict:
    plan = load(model_dir / "plan.json") or {}
    report = load(model_dir / "job" / "report.json") or {}
    hf = load(model_dir / "hf.json") or {}
    predicted, measured = report.get("predicted", {}), report.get("measured", {})
    training = plan.get("training", {})
    # A run off CUDA (dry run) measures the wrong device: no error against the GPU prediction.
    compare = error_pct if report.get("comparable", True) else (lambda _p, _m: None)
    return {
        "model": model_dir.name,
        "gpu": plan.get("gpu"),
        "layout": report.get("layout"),
        "micro_batch": training.get("micro_batch"),
        "grad_accum": training.get("grad_accum"),
        "ac": training.get("activation_checkpointing"),
        "pred_peak_gib": predicted.get("peak_gib"),
        "meas_peak_gib": measured.get("peak_gib"),
        "peak_err_pct": compare(predicted.get("peak_gib"), measured.get("peak_gib")),
        "pred_step_s": predicted.get("step_s"),
        "meas_step_s": measured.get("step_s"),
        "step_err_pct": compare(predicted.get("step_s"), measured.get("step_s")),
        "native_mfu": measured.get("mfu"),
        "hf_mfu": hf.get("mfu"),
        "hf_step_s_per_microbatch": hf.get("step_s"),
        "hf_peak_gib": hf.get("peak_alloc_gib"),
        "outcome": report.get("outcome"),
    }


def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main(results: Path) -> None:
    rows = [row_for(d) for d in sorted(results.iterdir()) if d.is_dir()]
    (results / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    header = (
        "| model | GPU | layout | mb x acc | AC | peak GiB pred/meas (err) | step s pred/meas (err) "
        "| MFU native | MFU stock HF |"
    )
    lines = [header, "|" + "---|" * 9]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['gpu']} | {r['layout']} | {r['micro_batch']} x {r['grad_accum']} | {r['ac']} "
            f"| {fmt(r['pred_peak_gib'], '.1f')}/{fmt(r['meas_peak_gib'], '.1f')} ({fmt(r['peak_err_pct'], '+.1f')}%) "
            f"| {fmt(r['pred_step_s'], '.3f')}/{fmt(r['meas_step_s'], '.3f')} ({fmt(r['step_err_pct'], '+.1f')}%) "
            f"| {fmt(r['native_mfu'], '.1%')} | {fmt(r['hf_mfu'], '.1%')} |"
        )
    text = "\n".join(lines)
    (results / "summary.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/gpu_validate"))

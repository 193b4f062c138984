"""Read the calibration runs and compare them with the analytic model's predictions."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from planner.catalog.hardware import load_catalog
from planner.layout import ActivationCheckpointing, Implementation, Layout, TrainingConfig
from planner.model.estimate import estimate
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.model.spec import ModelSpec

DEFAULT_H200_RUNS = Path(__file__).resolve().parent.parent / "data" / "calibration" / "h200_fsdp2_hf_llama.jsonl"


@dataclass(frozen=True)
class H200Row:
    name: str
    model: ModelSpec
    training: TrainingConfig
    peak_alloc_gib: float
    peak_reserved_gib: float
    step_s: float


def read_h200_runs(path: Path) -> list[H200Row]:
    rows = []
    for line in Path(path).read_text().splitlines():
        d = json.loads(line)
        if d.get("kind") == "info" or d.get("status") != "ok":
            continue
        model = ModelSpec(
            name=d["model"],
            num_layers=d["layers"],
            hidden_size=d["hidden"],
            ffn_hidden_size=d["ffn"],
            num_heads=d["heads"],
            num_kv_heads=d["kv_heads"],
            vocab_size=d["vocab"],
            tied_embeddings=d["tied"],
            max_seq_len=max(8192, d["seq"]),
        )
        assert model.num_params() == d["n_params"], (d["model"], model.num_params(), d["n_params"])
        ac = ActivationCheckpointing.FULL if d["act_ckpt"] else ActivationCheckpointing.NONE
        training = TrainingConfig(
            seq_len=d["seq"],
            micro_batch=d["micro_batch"],
            activation_checkpointing=ac,
            impl=Implementation.HF,
            compile=d["compile"],
        )
        rows.append(
            H200Row(
                name=f"{d['model']} b{d['micro_batch']} s{d['seq']}{' ac' if d['act_ckpt'] else ''}",
                model=model,
                training=training,
                peak_alloc_gib=d["peak_alloc_gib"],
                peak_reserved_gib=d["peak_reserved_gib"],
                step_s=d["step_s_median"],
            )
        )
    return rows


@dataclass(frozen=True)
class Comparison:
    name: str
    predicted: float
    measured: float

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def compare_h200(rows: list[H200Row], settings: ModelingSettings = DEFAULT_SETTINGS) -> dict[str, list[Comparison]]:
    """Every row predicted with ``settings``, and with the loss those runs computed: stock HF
    ``model(labels=...)``, full-vocabulary fp32 logits (``loss_chunk_tokens=0``)."""
    settings = settings.but(loss_chunk_tokens=0)
    catalog = load_catalog()
    out: dict[str, list[Comparison]] = {"peak_alloc": [], "reserved": [], "step": []}
    for r in rows:
        e = estimate(r.model, "h200-sxm", Layout(), r.training, num_gpus=1, catalog=catalog, settings=settings)
        out["peak_alloc"].append(Comparison(r.name, e.memory.peak_gib, r.peak_alloc_gib))
        out["reserved"].append(Comparison(r.name, e.memory.reserved_gib, r.peak_reserved_gib))
        out["step"].append(Comparison(r.name, e.time.step_s, r.step_s))
    return out

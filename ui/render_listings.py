"""The catalog's and the model presets' listings (``trainplan catalog``, ``trainplan models``)."""

from __future__ import annotations

from rich.table import Table

from planner.catalog.prices import PriceBasis
from planner.units import GIB
from ui.render import add_columns, emit_json, out, price_cell


def catalog(cat, *, as_json: bool) -> None:
    if as_json:
        emit_json({gid: g.model_dump(mode="json") for gid, g in cat.gpus.items()})
        return
    table = Table(
        title=f"GPU catalog (dense peaks; scale-up GB/s per direction; * price: {PriceBasis.ESTIMATE.words}, or"
        f" {PriceBasis.ONE_OFFER.words};"
        " sources: --json)"
    )
    # The scale-up rate per direction is what the export parts cut (H800, A800: trial s24).
    # "buy $": the purchase price fleet and portfolio price an owned GPU at (with its share of the
    # server and network, docs/hardware.md; trial s36: only --json showed it)
    columns = (
        "id", "memory GiB", "HBM TB/s", "bf16 TF", "fp8 TF", "scale-up", "GB/s", "net Gb/s", "TDP W", "$/GPU-h", "buy $",
    )  # fmt: skip
    add_columns(table, columns)
    for g in cat.gpus.values():
        fp8 = g.peak_flops_per_s.get("fp8")
        table.add_row(
            g.id,
            f"{g.memory_bytes / GIB:.1f}",
            f"{g.hbm_bandwidth_bytes_per_s / 1e12:.2f}",
            f"{g.peak_flops('bf16') / 1e12:.0f}",
            "-" if fp8 is None else f"{fp8 / 1e12:.0f}",
            f"{g.scaleup_kind} x{g.scaleup_domain_size}",
            f"{g.scaleup_bandwidth_bytes_per_s / 1e9:.0f}",
            f"{g.internode_bandwidth_bytes_per_s * 8 / 1e9:.0f}",
            f"{g.tdp_watts:.0f}",
            price_cell(g.price_per_gpu_hour_usd, g.price_basis),
            "-" if g.purchase_price_usd is None else f"{g.purchase_price_usd:,.0f}",
        )
    out.print(table)
    networks = Table(title="Scale-out networks (--network; net Gb/s above: each GPU's default)")
    add_columns(networks, ("id", "Gb/s per GPU", "one ring's measured busbw, Gb/s", "name"))
    for n in cat.networks.values():
        ring = "-" if n.ring_busbw_gbit_per_s is None else f"{n.ring_busbw_gbit_per_s:.1f}"
        if n.allreduce_busbw_curve is not None:
            ring = f"by message size ({n.allreduce_busbw_nodes} nodes)"
        networks.add_row(n.id, f"{n.gbit_per_s_per_gpu:.0f}", ring, n.name)
    out.print(networks)


def models(specs, *, as_json: bool, named: bool = False) -> None:
    """The presets, or the presets and config.json files ``named``: name, family, parameters (active
    ones where MoE), shape and context; in --json also a tied head, the windowed layers and the MTP
    modules' parameters (trial s52: deepseek-v3's 11.61 B MTP was shown nowhere)."""
    rows = [
        {
            "name": m.name,
            "family": m.family,
            "params_b": m.num_params() / 1e9,
            "active_params_b": m.num_active_params() / 1e9 if m.is_moe else None,
            "layers": m.num_layers,
            "hidden": m.hidden_size,
            "heads": m.num_heads,
            "kv_heads": m.num_kv_heads,
            "experts": m.num_experts if m.is_moe else None,
            "context": m.max_seq_len,
            "tied_embeddings": m.tied_embeddings,
            "windowed_layers": m.windowed_layers,
            "window_tokens": m.window_tokens,
            "mtp_params_b": m.param_counts().mtp / 1e9 if m.mtp_layers else None,
        }
        for m in specs
    ]
    if as_json:
        emit_json(rows)
        return
    # trial s52: a user's config.json was listed under "Model presets"
    title = (
        "Models as --model reads them" if named else "Model presets (--model NAME; or a Hugging Face config.json path)"
    )
    table = Table(title=title)
    add_columns(
        table, ("name", "family", "params B", "active B", "layers", "hidden", "heads / kv", "experts", "context")
    )
    for r in rows:
        active, experts = r["active_params_b"], r["experts"]
        table.add_row(
            r["name"],
            r["family"],
            _billions(r["params_b"]),
            "-" if active is None else _billions(active),
            str(r["layers"]),
            f"{r['hidden']:,}",
            f"{r['heads']} / {r['kv_heads']}",
            "-" if experts is None else str(experts),
            f"{r['context']:,}",
        )
    out.print(table)
    for r in rows:
        if r["mtp_params_b"] is not None:
            out.print(
                f"{r['name']}: its MTP modules hold {_billions(r['mtp_params_b'])} B more (not in params B, not trained)"
            )
    # trial s26: gpt-oss's card says 5.13B active, which leaves the input embedding out.
    out.print("active B counts the input embedding, as most model cards do (gpt-oss's does not: 5.13B for 120b)")


def _billions(value_b: float) -> str:
    """'176.25'; two significant figures below 0.01 B (trial s49 L5: tiny's 3.2M parameters read '0.00')."""
    return f"{value_b:,.2f}" if value_b >= 0.01 else f"{value_b:.2g}"

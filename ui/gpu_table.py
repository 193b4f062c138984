"""The sidebar's GPU table: one ``st.data_editor`` row per catalog GPU type.

Columns: allowed, inventory (blank = no limit, 0 = none; the same in single-job and portfolio
mode), USD per GPU-hour (rent), purchase USD (buy), memory, bf16 TFLOP/s and where the rates
come from. The table's values live in ``st.session_state["gpu_rows"]`` (a DataFrame indexed by
GPU id) as the editor was made on them; the rows in use are those with the editor's edits
(``current_rows``: Streamlit keeps a keyed editor's edits, the values set, over reruns). The editor
is made anew on the rows in use (``replace_rows``) only where they are replaced ("use every GPU",
"Send to plan") or its columns change (language, rent or buy), so an edit survives any rerun, a
language switch and a mode change. Trial s35: re-created after every edit, the editor lost the
clicks made on it while a rerun replaced it (16 of 22 quick unticks; a plan then used a type the
user had unticked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from planner.catalog.hardware import Catalog
from planner.catalog.prices import catalog_with_price_kind, offers_of
from planner.catalog.terms import term_billing
from planner.model.energy import gpu_wall_power_w
from planner.search.ownership import TcoAssumptions
from planner.units import GIB
from ui import app_core
from ui.i18n import Labels, plain

ROWS_KEY = "gpu_rows"
VERSION_KEY = "gpu_editor_version"
COLUMNS_KEY = "gpu_editor_columns"  # (language, buy mode) the editor's columns were made for
SENT_KEY = "gpu_sent_inventory"  # (type, count sent, its inventory before) of the explorer's "Send to plan"
EDITABLE = ("allowed", "inventory", "usd_per_gpu_hour", "purchase_usd")
TFLOPS = 1e12


def default_rows(cat: Catalog) -> pd.DataFrame:
    """Every catalog GPU allowed, no inventory limit, the catalog's prices; memory, bf16 peak, provenance."""
    rows = []
    for gpu in cat.gpus.values():
        bf16 = gpu.peak_flops_per_s.get("bf16")
        rows.append(
            {
                "gpu": gpu.id,
                "allowed": True,
                "inventory": None,
                "usd_per_gpu_hour": float(gpu.price_per_gpu_hour_usd),
                "purchase_usd": float(gpu.purchase_price_usd or 0.0),
                "memory_gib": round(gpu.memory_bytes / GIB, 1),
                "bf16_tflops": None if bf16 is None else round(bf16 / TFLOPS),
                "source": provenance(gpu.sources),
            }
        )
    frame = pd.DataFrame(rows).set_index("gpu")
    frame["inventory"] = frame["inventory"].astype("Int64")  # nullable: blank = no limit
    return frame


def provenance(sources: dict[str, str]) -> str:
    """Where the rates and the price come from, short: 'bf16: dense_bf16_tflops from gpu_specs.csv ...'."""
    parts = [f"{key}: {sources[key]}" for key in ("bf16_tflops", "price_usd_per_gpu_hour") if key in sources]
    return " | ".join(parts)


def rows_with(cat: Catalog, allowed=None, inventory=None, prices=None, purchases=None) -> pd.DataFrame:
    """``default_rows`` with some types allowed (the rest not) and some values set: tests and callers."""
    frame = default_rows(cat)
    if allowed is not None:
        frame["allowed"] = frame.index.isin(list(allowed))
    for column, values in (("inventory", inventory), ("usd_per_gpu_hour", prices), ("purchase_usd", purchases)):
        for gpu, value in (values or {}).items():
            frame.loc[gpu, column] = value
    return frame


def apply_edits(frame: pd.DataFrame, edits: dict) -> pd.DataFrame:
    """The rows with a data_editor's ``edited_rows`` ({position: {column: value}}) applied."""
    out = frame.copy()
    for position, changes in (edits or {}).get("edited_rows", {}).items():
        gpu = out.index[int(position)]
        for column, value in changes.items():
            if column in EDITABLE:
                out.loc[gpu, column] = value
    return out


def editor_key() -> str:
    return f"gpu_editor_{st.session_state.get(VERSION_KEY, 0)}"


def current_rows() -> pd.DataFrame:
    """The rows in use: those the editor was made on, with its edits."""
    return apply_edits(st.session_state[ROWS_KEY], st.session_state.get(editor_key(), {}))


def replace_rows(rows: pd.DataFrame) -> None:
    """Make the editor anew on ``rows`` (a new key: its edits start empty)."""
    st.session_state[ROWS_KEY] = rows
    st.session_state[VERSION_KEY] = st.session_state.get(VERSION_KEY, 0) + 1


def send_rows(gpu: str, count: int) -> None:
    """The explorer's "Send to plan": only ``gpu``, at most ``count`` of it; its inventory before is
    kept for ``allow_all`` (trial s35, round 2: a typed 64 became 8 for good, unsaid)."""
    rows = current_rows()
    before = rows.loc[gpu, "inventory"]
    st.session_state[SENT_KEY] = (gpu, count, None if pd.isna(before) else int(before))
    rows["allowed"] = rows.index == gpu
    rows.loc[gpu, "inventory"] = count
    replace_rows(rows)


def allow_all() -> None:
    """on_click: tick every row again, the way back from "Send to plan" (which unticks all but one),
    and the sent type's inventory back where it still reads the count sent."""
    rows = current_rows()
    sent = st.session_state.pop(SENT_KEY, None)
    if sent is not None and rows.loc[sent[0], "inventory"] == sent[1]:
        rows.loc[sent[0], "inventory"] = pd.NA if sent[2] is None else sent[2]
    rows["allowed"] = True
    replace_rows(rows)


@dataclass(frozen=True)
class GpuChoice:
    gpus: dict[str, int | None]  # allowed type -> inventory (None = no limit)
    prices: dict[str, float]  # USD per GPU-hour that differ from the catalog's (rent) or amortised (buy)
    price_kind: str | None = None  # rent at the median of this kind's offers (with_price_kind)
    # The table's purchase price per allowed type and the ownership assumptions (Buy mode; None:
    # the defaults): what a portfolio's held GPUs cost (trial s26b: the portfolio ignored both).
    purchases: dict[str, float] = field(default_factory=dict)
    tco: TcoAssumptions | None = None
    left_out: tuple[str, ...] = ()  # allowed types without an offer of ``price_kind`` (not planned)
    term_filled: float = 0.0  # a reserved kind's term beyond the job that other work pays (--term-filled)
    # the table's rent ($/h) that differs from the catalog's, in every mode: the fleet view rents at it
    # and weighs buying against it under Buy too, where ``prices`` are the amortised owned rates
    rents: dict[str, float] = field(default_factory=dict)


def column_config(tr: Labels, bought: bool) -> dict:
    """Narrow columns, so the sidebar (``app.SIDEBAR_PX``) shows the type, the tick, the inventory
    and the price (issue 30: it showed two columns); the specs and the provenance follow."""
    c = st.column_config
    return {
        "_index": c.TextColumn(tr("col_gpu"), disabled=True, pinned=True),
        "allowed": c.CheckboxColumn(tr("gpu_allowed"), width=56, help=tr("gpu_allowed_help")),
        "inventory": c.NumberColumn(
            tr("gpu_max"), min_value=0, step=1, format="%d", width=60, help=tr("inventory_help")
        ),
        "usd_per_gpu_hour": c.NumberColumn(
            tr("gpu_price"),
            min_value=0.01,
            step=0.01,
            format="$%.2f",
            disabled=bought,
            width=60,
            help=tr("gpu_price_help"),
        ),
        "purchase_usd": c.NumberColumn(
            tr("gpu_purchase"),
            min_value=0.0,
            step=1000.0,
            format=app_core.DOLLARS,
            disabled=not bought,
            width=70,
            help=tr("gpu_purchase_help"),
        ),
        "memory_gib": c.NumberColumn(tr("gpu_memory"), format="%.1f", disabled=True, width=60),
        "bf16_tflops": c.NumberColumn(tr("gpu_bf16"), format="%,d", disabled=True, width=60),
        "source": c.TextColumn(tr("gpu_source"), disabled=True, width="large"),
    }


def column_order(bought: bool) -> tuple[str, ...]:
    """The price being edited (rent or buy) right after the inventory; the other one last."""
    price, other = ("purchase_usd", "usd_per_gpu_hour") if bought else ("usd_per_gpu_hour", "purchase_usd")
    return ("allowed", "inventory", price, "memory_gib", "bf16_tflops", other, "source")


def gpu_table(tr: Labels, cat: Catalog, tco: TcoAssumptions | None, utilisation: float | None) -> GpuChoice | None:
    """The editor, read into allowed types, inventories and prices; None (with an error) when unusable."""
    columns = (tr.lang, tco is not None)
    if st.session_state.get(COLUMNS_KEY, columns) != columns:
        replace_rows(current_rows())  # other labels or a disabled price column: keep the edits first
    st.session_state[COLUMNS_KEY] = columns
    base: pd.DataFrame = st.session_state[ROWS_KEY]
    st.data_editor(
        base,
        key=editor_key(),
        column_config=column_config(tr, tco is not None),
        column_order=column_order(tco is not None),
        disabled=("memory_gib", "bf16_tflops", "source"),
        num_rows="fixed",
        height=app_core.table_height(len(base)),  # every row in view, no inner scrolling
        placeholder="",  # a blank inventory is "no limit" (the help says blank), not the word "None"
    )
    frame = current_rows()
    st.caption(tr("gpu_table_help"))
    if (sent := st.session_state.get(SENT_KEY)) is not None:
        was = tr("gpu_no_limit") if sent[2] is None else f"{sent[2]:,}"
        st.caption(tr("gpu_sent", gpu=sent[0], count=sent[1], was=was))
    st.button(
        tr("gpu_allow_all"),
        key="gpu_allow_all",
        on_click=allow_all,
        disabled=bool(frame["allowed"].all()),
        help=tr("gpu_allow_all_help"),
    )
    return read_choice(tr, cat, frame, tco, utilisation)


def read_choice(
    tr: Labels, cat: Catalog, frame: pd.DataFrame, tco: TcoAssumptions | None, utilisation: float | None
) -> GpuChoice | None:
    gpus: dict[str, int | None] = {}
    prices: dict[str, float] = {}
    purchases: dict[str, float] = {}
    rents: dict[str, float] = {}
    for gpu, row in frame[frame["allowed"].astype(bool)].iterrows():
        inventory = None if pd.isna(row["inventory"]) else int(row["inventory"])
        if inventory == 0:
            continue  # none of this type, in every mode
        gpus[str(gpu)] = inventory
        if float(row["purchase_usd"]) > 0:
            purchases[str(gpu)] = float(row["purchase_usd"])
        if not math.isclose(float(row["usd_per_gpu_hour"]), cat.gpus[str(gpu)].price_per_gpu_hour_usd):
            rents[str(gpu)] = float(row["usd_per_gpu_hour"])
        price = price_of(tr, cat, str(gpu), row, tco, utilisation)
        if price is None:
            return None
        if not math.isclose(price, cat.gpus[str(gpu)].price_per_gpu_hour_usd):
            prices[str(gpu)] = price
    if not gpus:
        st.error(tr("no_gpus"))
        return None
    if tco is not None:
        st.caption(" · ".join(tr("amortised", gpu=gpu, price=price) for gpu, price in prices.items()))
    return GpuChoice(gpus=gpus, prices=prices, purchases=purchases, tco=tco, rents=rents)


# The app's rent choices beside on-demand (the catalog's default price) and their price kinds.
PRICE_KIND_OF = {"spot": "spot", "reserved_1y": "reserved-1y", "reserved_3y": "reserved-3y"}


def with_price_kind(tr: Labels, cat: Catalog, choice: GpuChoice, pricing: str) -> GpuChoice | None:
    """The choice under a price kind (planner/catalog/prices.py): only the GPUs with an offer of
    that kind, or with the user's own $/h in the table (the CLI's --price, a jobs file's
    [rent_usd_per_gpu_hour]; app50: it was dropped), are rented, said in a caption with their prices
    (the others can still be bought in the rent-vs-buy view); None (with an error) when none is."""
    kind = PRICE_KIND_OF[pricing]
    offered = [g for g in choice.gpus if offers_of(cat.gpus[g], kind)]
    priced = [g for g in choice.gpus if g in offered or g in choice.rents]
    name = tr.kind(kind)
    if not priced:  # trial s26b: "Allow at least one GPU type" read wrong with one allowed
        st.error(tr("no_kind_offers", kind=name, gpus=tr.join(choice.gpus)))
        return None
    medians = catalog_with_price_kind(cat, kind, offered, priced=[g for g in priced if g not in offered]).gpus
    prices = tr.join(
        tr("price_yours", gpu=g, price=choice.rents[g])
        if g in choice.rents
        else f"{g} ${medians[g].price_per_gpu_hour_usd:.2f}"
        for g in priced
    )
    dropped = sorted(set(choice.gpus) - set(priced))
    st.caption(tr("price_kind_note", kind=name, prices=prices, dropped=f" ({tr.join(dropped)})" if dropped else ""))
    filled = 0.0  # a reserved term is billed whole unless other work fills the rest (--term-filled; review s43)
    if term_billing(kind) is not None:
        filled = st.slider(tr("term_filled"), 0, 100, key="term_filled_pct", help=tr("term_filled_help")) / 100
    return GpuChoice(
        gpus={g: n for g, n in choice.gpus.items() if g in priced},
        prices={g: p for g, p in choice.prices.items() if g in priced},
        price_kind=kind,
        # every allowed type's purchase price, offered or not: the fleet view may buy a type no offer
        # of the kind rents (held only, as `trainplan fleet` buys it; app50: the page could not)
        purchases=choice.purchases,
        tco=choice.tco,
        left_out=tuple(dropped),
        term_filled=filled,
        rents={g: p for g, p in choice.rents.items() if g in priced},
    )


def price_of(
    tr: Labels, cat: Catalog, gpu: str, row: pd.Series, tco: TcoAssumptions | None, utilisation: float | None
) -> float | None:
    """Rent: the row's USD per GPU-hour. Buy: its purchase price amortised (docs/app.md)."""
    if tco is None:
        price = float(row["usd_per_gpu_hour"])
        if not price > 0:
            st.error(tr("bad_price", gpu=gpu))
            return None
        return price
    assert utilisation is not None  # set whenever tco is
    if not float(row["purchase_usd"]) > 0:  # amortised_price_per_gpu_hour's refusal, in the page's words
        st.error(tr("bad_purchase", gpu=gpu))
        return None
    try:
        return app_core.amortised_price_per_gpu_hour(
            float(row["purchase_usd"]), gpu_wall_power_w(cat.gpus[gpu]), utilisation, tco
        )
    except ValueError as exc:
        st.error(plain(f"{gpu}: {exc}"))
        return None

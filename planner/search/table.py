"""The scored candidate table the ILPs solve over (``ScoredTable``): one row per candidate with
its fit, time, cost and the checks' columns, built by planner/search/score.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from planner.model.candidates import AC_CODES, SHARDING_CODES

_COLUMN_KINDS = {  # column -> numpy dtype it is coerced to
    "gpu_id": object,
    "num_gpus": np.int64,
    "fits_memory": bool,
    "memory_need_gib": np.float64,
    "capacity_gib": np.float64,
    "time_to_train_s": np.float64,
    "cost_usd": np.float64,
    "batch_ok": bool,
    "divisible": bool,
    "label": object,
    "dominated": bool,
}


# The degrees a layout's label names when above 1: the mesh, then interleaving and experts (trial
# s28c: a MoE job's label left out its vpp 4 and ep 4).
LABEL_AXES = ("dp_replicate", "dp_shard", "tp", "pp", "cp", "vpp", "ep")
# The candidate columns a scored table carries for ``row_label`` (planner/search/score.py)
_LABEL_COLUMNS = ("sharding", *LABEL_AXES, "micro_batch", "grad_accum", "ac")


def layout_label(sharding: str, degrees: Sequence[int], micro_batch: int, grad_accum: int, ac: str) -> str:
    """A layout in short, 'zero1 dp_shard=12 tp=2 | mb 2 x 21 | ac none' (``degrees`` in
    LABEL_AXES' order): the one rule of every table's and plan's label (planner/api/explore.py)."""
    axes = "".join(f" {axis}={degree}" for axis, degree in zip(LABEL_AXES, degrees, strict=True) if degree > 1)
    return f"{sharding}{axes} | mb {micro_batch} x {grad_accum} | ac {ac}"


def limit_figure(at_risk: np.ndarray, own: np.ndarray) -> np.ndarray:
    """The figure a deadline or a budget judges a plan by: its figure at the request's risk
    quantile, never under the model's own (the headline a plan prints). Held out, the model's own
    figure erred less than the band's median, so judging at a median below it passed plans whose
    printed cost broke the budget (buyer trial s45: --risk p50 chose a $1.94M plan under a $1.90M
    budget, its median $1.90M). At p80 / p90 the quantile is the higher wherever the band lies above
    the model's figure, as it does on most regimes. NaN (an untimed row) stays NaN: it passes no limit."""
    return np.maximum(at_risk, own)


@dataclass(frozen=True, eq=False)  # identity equality: == on arrays has no single truth value
class ScoredTable:
    """The scored candidates the ILP solves over: struct of numpy arrays, one row per (gpu type,
    gpu count, layout, micro-batch, ...) candidate, with its fit, time, cost and the checks."""

    gpu_id: np.ndarray  # str (object) array
    num_gpus: np.ndarray  # int
    fits_memory: np.ndarray  # bool: predicted reserved memory <= capacity*(1-headroom)
    memory_need_gib: np.ndarray  # float: predicted per-GPU need (for diagnosis)
    capacity_gib: np.ndarray  # float
    time_to_train_s: np.ndarray  # float, for the job's token budget
    cost_usd: np.ndarray  # float, for the job (rent at on-demand price)
    batch_ok: np.ndarray  # bool: global batch within tolerance
    divisible: np.ndarray  # bool: heads%tp, layers%pp, degrees multiply to the count, tp in domain
    label: np.ndarray  # str: human-readable layout description
    extra: dict[str, np.ndarray] = field(default_factory=dict)  # other columns to carry through
    # bool: fits, but the search left it untimed (NaN time and cost) since a row alike but for
    # recompute fits without it and is never worse (planner/search/score.py recompute_twins).
    # Empty: no row is.
    dominated: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def __post_init__(self) -> None:
        num_rows = len(np.asarray(self.gpu_id))
        if len(self.dominated) == 0:
            object.__setattr__(self, "dominated", np.zeros(num_rows, dtype=bool))
        for name, dtype in _COLUMN_KINDS.items():
            column = np.asarray(getattr(self, name))
            if column.ndim != 1 or len(column) != num_rows:
                raise ValueError(
                    f"ScoredTable.{name}: expected a 1-D array of {num_rows} rows, got shape {column.shape}"
                )
            object.__setattr__(self, name, column.astype(dtype, copy=False))
        extra = {}
        for name, values in self.extra.items():
            column = np.asarray(values)
            if name in _COLUMN_KINDS:
                raise ValueError(f"ScoredTable.extra[{name!r}]: clashes with a core column")
            if column.ndim != 1 or len(column) != num_rows:
                raise ValueError(f"ScoredTable.extra[{name!r}]: expected {num_rows} rows, got shape {column.shape}")
            extra[name] = column
        object.__setattr__(self, "extra", extra)

    def __len__(self) -> int:
        return len(self.gpu_id)

    def valid(self) -> np.ndarray:
        """The rows that fit, pass the layout rules and the batch, and were timed."""
        return self.fits_memory & ~self.dominated & self.divisible & self.batch_ok

    def row_label(self, row: int) -> str | None:
        """Row ``row``'s ``layout_label``: its ``label`` where filled, else from the candidate columns
        the search's table carries (None: a table without them, one built by hand)."""
        if self.label[row]:
            return str(self.label[row])
        if not all(name in self.extra for name in _LABEL_COLUMNS):
            return None
        value = {name: self.extra[name][row] for name in _LABEL_COLUMNS}
        return layout_label(
            SHARDING_CODES[int(value["sharding"])].value,
            [int(value[axis]) for axis in LABEL_AXES],
            int(value["micro_batch"]),
            int(value["grad_accum"]),
            AC_CODES[int(value["ac"])].value,
        )

    def gpu_codes(self) -> np.ndarray:
        """An int per row naming its GPU type: the search's ``extra['gpu_index']`` where the table
        keeps it (a million names cost a hash each), else the names' codes."""
        codes = self.extra.get("gpu_index")
        return pd.factorize(self.gpu_id)[0] if codes is None else codes

    def count_cells(self) -> np.ndarray:
        """An int per row naming its (GPU type, GPU count): ``pareto_mask``'s and the knee's cells."""
        return self.gpu_codes().astype(np.int64) * (int(self.num_gpus.max(initial=0)) + 1) + self.num_gpus

    def limit_figures(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's time and cost as a deadline and a budget judge them (``limit_figure``): the
        table's own where it carries no model figures (a table built by hand)."""
        own_time, own_cost = self.extra.get("model_time_s"), self.extra.get("model_cost_usd")
        if own_time is None or own_cost is None:
            return self.time_to_train_s, self.cost_usd
        return limit_figure(self.time_to_train_s, own_time), limit_figure(self.cost_usd, own_cost)

    def judged_times(self) -> ScoredTable:
        """The table with each row's time as a deadline judges it (``limit_figures``): a fleet's or
        a portfolio's schedule holds a job's GPUs and checks its deadline by that time, as plan's
        limits do (review s46 M1: at p50 a job ended "in time" at its median while its printed time
        ended past the deadline)."""
        return replace(self, time_to_train_s=self.limit_figures()[0])

    def take(self, indices: np.ndarray | list[int]) -> ScoredTable:
        """The rows at ``indices`` (in that order), extra columns included."""
        indices = np.asarray(indices, dtype=np.int64)
        core = {name: getattr(self, name)[indices] for name in _COLUMN_KINDS}
        return ScoredTable(**core, extra={k: v[indices] for k, v in self.extra.items()})

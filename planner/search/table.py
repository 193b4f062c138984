"""The scored candidate table the ILPs solve over (``ScoredTable``): one row per candidate with
its fit, time, cost and the checks' columns, built by planner/search/score.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

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

    def gpu_codes(self) -> np.ndarray:
        """An int per row naming its GPU type: the search's ``extra['gpu_index']`` where the table
        keeps it (a million names cost a hash each), else the names' codes."""
        codes = self.extra.get("gpu_index")
        return pd.factorize(self.gpu_id)[0] if codes is None else codes

    def count_cells(self) -> np.ndarray:
        """An int per row naming its (GPU type, GPU count): ``pareto_mask``'s and the knee's cells."""
        return self.gpu_codes().astype(np.int64) * (int(self.num_gpus.max(initial=0)) + 1) + self.num_gpus

    def take(self, indices: np.ndarray | list[int]) -> ScoredTable:
        """The rows at ``indices`` (in that order), extra columns included."""
        indices = np.asarray(indices, dtype=np.int64)
        core = {name: getattr(self, name)[indices] for name in _COLUMN_KINDS}
        return ScoredTable(**core, extra={k: v[indices] for k, v in self.extra.items()})

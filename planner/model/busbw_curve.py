"""A network's measured all-reduce bus bandwidth by message size (NetworkSpec.allreduce_busbw_curve),
held per candidate row on one grid of message sizes (``GRID_BYTES``) and read back at a
collective's per-call message (planner/model/comm.py ``curve_bus_bandwidth``).

nccl-tests sweep powers of two (``all_reduce_perf -b 8 -e 16G -f 2``), so a curve sampled at them
lies on the grid unchanged; between grid points the rate is interpolated linearly in log size and
log rate (a power law between neighbouring sizes), and clamped at the grid's ends.
"""

from __future__ import annotations

import numpy as np

# 1 MiB .. 8 GiB: below, a message is latency-bound and the ring model's own latency prices it
# no faster (comm.all_gather_s takes the slower of the two); above, every curve has flattened.
GRID_BYTES = 2.0 ** np.arange(20, 34)


def log_interp(sizes: np.ndarray, rates: np.ndarray, message_bytes) -> np.ndarray:
    """Row i of ``rates`` (rows x sizes; one row: shared), measured at ascending ``sizes``, read at
    ``message_bytes[i]``: linear in log size and log rate, clamped at the ends."""
    log_sizes = np.log(sizes)
    x = np.clip(np.log(np.asarray(message_bytes, dtype=float)), log_sizes[0], log_sizes[-1])
    upper = np.clip(np.searchsorted(log_sizes, x, side="right"), 1, len(sizes) - 1)
    t = (x - log_sizes[upper - 1]) / (log_sizes[upper] - log_sizes[upper - 1])
    log_rates = np.log(np.atleast_2d(rates))
    row = np.arange(len(log_rates)) if len(log_rates) > 1 else 0
    low, high = log_rates[row, upper - 1], log_rates[row, upper]
    return np.exp(low + t * (high - low))


def on_grid(curve: tuple[tuple[float, float], ...] | None) -> np.ndarray:
    """A (message bytes, bus bytes/s) curve at ``GRID_BYTES``; NaN throughout for None."""
    if curve is None:
        return np.full(len(GRID_BYTES), np.nan)
    sizes, rates = (np.array(v, dtype=float) for v in zip(*curve, strict=True))
    return log_interp(sizes, rates, GRID_BYTES)

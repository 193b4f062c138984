"""The axes' collectives together hide no more than the compute window (planner/model/comm.py
``within_window``), so adding compute never shortens a step."""

from __future__ import annotations

import numpy as np

from planner.model import comm

OVERLAPS = (0.85, 0.3, 0.5)  # dp, tp, pp: the default profile's fractions


def exposures(raw: list[np.ndarray], window: np.ndarray) -> list[np.ndarray]:
    alone = [comm.exposed_s(r, window, o) for r, o in zip(raw, OVERLAPS, strict=True)]
    return comm.within_window(raw, alone, window)


def test_the_hidden_total_stays_within_the_window():
    rng = np.random.default_rng(0)
    window = rng.uniform(0.1, 10.0, 5000)
    raw = [rng.uniform(0.0, 20.0, 5000) for _ in OVERLAPS]
    exposed = exposures(raw, window)
    hidden = sum(r - e for r, e in zip(raw, exposed, strict=True))
    assert (hidden <= window * (1 + 1e-12)).all()
    assert (hidden > window * 0.999).any()  # the bound binds somewhere
    for r, e, o in zip(raw, exposed, OVERLAPS, strict=True):
        assert ((1 - o) * r <= e + 1e-12).all() and (e <= r + 1e-12).all()


def test_below_the_window_each_axis_is_judged_alone():
    window = np.array([10.0])
    raw = [np.array([1.0]), np.array([2.0]), np.array([0.5])]
    alone = [comm.exposed_s(r, window, o) for r, o in zip(raw, OVERLAPS, strict=True)]
    assert all(np.array_equal(a, b) for a, b in zip(comm.within_window(raw, alone, window), alone, strict=True))


def test_more_compute_never_shortens_the_step():
    """Step = compute + exposed: monotone in compute once the axes share the window (without it,
    dp's 0.85 and tp's 0.3 hide 1.15 s of traffic per added second)."""
    raw = [np.full(200, 8.0), np.full(200, 6.0), np.full(200, 1.0)]
    compute = np.linspace(0.5, 20.0, 200)
    step = compute + sum(exposures(raw, compute))
    assert (np.diff(step) >= -1e-12).all()
    alone = compute + sum(comm.exposed_s(r, compute, o) for r, o in zip(raw, OVERLAPS, strict=True))
    assert (np.diff(alone) < 0).any()  # what the window law removes


def test_no_compute_and_nan_pass_through():
    raw = [np.array([1.0, np.nan]), np.array([2.0, 1.0])]
    window = np.array([0.0, 1.0])
    alone = [comm.exposed_s(r, window, o) for r, o in zip(raw, OVERLAPS[:2], strict=True)]
    exposed = comm.within_window(raw, alone, window)
    assert exposed[0][0] == 1.0 and exposed[1][0] == 2.0  # nothing to hide under
    assert np.isnan(exposed[0][1])

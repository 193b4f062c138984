"""Where a new source's mean error may lie, given the mean errors of the sources measured.

A plan's run is a source no row came from: its offset from the model is one more draw of the
sources' offsets. From ``k`` sources' means with sample standard deviation ``s``, a new draw lies
within mean +- t_{k-1}(p) s sqrt(1 + 1/k) with probability 2p - 1: the prediction interval of a
new observation from a normal sample whose variance is estimated (NIST/SEMATECH e-Handbook of
Statistical Methods, sec. 7.2.2.1 "prediction intervals"; Student's t with k - 1 degrees of
freedom). With three sources it is 1.7 times the normal quantile's width, with two 2.9 times:
few sources say little about the next one.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np

# Points of the numerical integration of t's density (trapezoid rule on [0, t]): the quantiles are
# then exact to ~1e-7 for p <= 0.99 (tests/planner/test_new_source.py: the closed forms at 1 and
# 2 degrees of freedom).
GRID_POINTS = 4_001


def t_cdf(t: float, dof: int) -> float:
    """Student's t distribution function at ``t >= 0`` with ``dof`` degrees of freedom."""
    log_norm = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
    x = np.linspace(0.0, t, GRID_POINTS)
    density = np.exp(log_norm - (dof + 1) / 2 * np.log1p(x * x / dof))
    # the trapezoid rule written out: numpy 1.26 (pyproject's floor) has no np.trapezoid (review s42)
    return 0.5 + float(np.sum((density[1:] + density[:-1]) * np.diff(x)) / 2.0)


@functools.cache
def t_quantile(p: float, dof: int) -> float:
    """Student's t p-quantile (bisection on ``t_cdf``); the normal's past 1,000 degrees of freedom."""
    if dof > 1_000:
        return NormalDist().inv_cdf(p)
    if p < 0.5:
        return -t_quantile(1.0 - p, dof)
    low, high = 0.0, 1.0
    while t_cdf(high, dof) < p:
        high *= 2.0
    for _ in range(60):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if t_cdf(mid, dof) < p else (low, mid)
    return 0.5 * (low + high)


def new_source_quantile(p: float, sources: int) -> float:
    """The p-quantile of a new source's offset in units of the ``sources`` means' sample standard
    deviation: t_{k-1}(p) sqrt(1 + 1/k); the normal quantile's where fewer than two sources give
    no spread (their standard deviation is then 0, and so is the offset)."""
    if sources < 2:
        return NormalDist().inv_cdf(p)
    return t_quantile(p, sources - 1) * math.sqrt(1.0 + 1.0 / sources)

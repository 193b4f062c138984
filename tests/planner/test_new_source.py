"""The new-source offset's quantile (planner/accuracy/new_source.py): Student's t, checked against
its closed forms, and the memory band it widens."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from planner.accuracy.memory_band import MemoryRow, ratio_band, source_sigma
from planner.accuracy.new_source import new_source_quantile, t_cdf, t_quantile


@pytest.mark.parametrize("p", [0.6, 0.8, 0.9, 0.95, 0.99])
def test_t_quantiles_match_the_closed_forms(p):
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-6)  # Cauchy
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-6)
    assert t_quantile(1 - p, 3) == pytest.approx(-t_quantile(p, 3))
    assert t_cdf(t_quantile(p, 7), 7) == pytest.approx(p, abs=1e-7)
    # many degrees of freedom: the normal's, approached from above
    normal = NormalDist().inv_cdf(p)
    assert normal < t_quantile(p, 200) < normal * 1.01 and t_quantile(p, 5_000) == normal


def test_few_sources_widen_the_new_source_offset():
    """The prediction interval of one more source: t_{k-1} sqrt(1 + 1/k), 2.9 x the normal quantile
    at the 80 % band's end with two sources, 1.7 x with three, tending to 1."""
    z = NormalDist().inv_cdf(0.9)
    ratios = [new_source_quantile(0.9, k) / z for k in (2, 3, 5, 30)]
    assert ratios == sorted(ratios, reverse=True) and ratios[-1] > 1.0
    assert ratios[0] == pytest.approx(2.94, abs=0.01) and ratios[1] == pytest.approx(1.70, abs=0.01)
    assert new_source_quantile(0.9, 1) == z  # one source: no spread to scale


def _rows(offsets: dict[str, list[float]]) -> tuple[MemoryRow, ...]:
    return tuple(
        MemoryRow(source, f"{source} {i}", "trainplan", False, "h100-sxm", 8, "reserved", 10.0 * (1 + e), 10.0)
        for source, errors in offsets.items()
        for i, e in enumerate(errors)
    )


def test_the_memory_band_is_wider_with_fewer_sources_of_the_same_spread():
    """Two sources against six whose means have the same standard deviation: the band whose
    new-source offset is read from two is the wider, on both ends."""
    six = _rows({name: [0.04 * (i % 2)] for i, name in enumerate("abcdef")})
    gap = math.expm1(source_sigma(six) * math.sqrt(2.0))  # two log-means this far apart: the same deviation
    two = _rows({"a": [0.0], "b": [gap]})
    assert source_sigma(two) == pytest.approx(source_sigma(six))
    rows = _rows({"x": [0.0, 0.01, 0.02, 0.03]})
    (lo2, hi2), (lo6, hi6) = ratio_band(rows, two), ratio_band(rows, six)
    assert lo2 < lo6 < 1.0 < 1.03 < hi6 < hi2

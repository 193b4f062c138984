"""A whole run's losses beside failures and checkpoints (planner/model/goodput.py run_losses)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.model.goodput import goodput, run_losses
from planner.model.settings import DEFAULT_SETTINGS

S = DEFAULT_SETTINGS


def test_stragglers_count_beyond_one_node_as_the_expected_slowest_of_n():
    losses = run_losses(np.array([1.0, 8.0, 2048.0, 16384.0]), np.array([1.0, 1.0, 256.0, 2048.0]), S)
    expected = S.straggler_sigma * (math.sqrt(2 * math.log(2048)) - math.sqrt(2 * math.log(8)))
    assert list(losses.straggler[:2]) == [0.0, 0.0]
    assert losses.straggler[2] == pytest.approx(expected)
    assert losses.straggler[3] > losses.straggler[2]


def test_every_loss_lengthens_the_wall_time_and_none_is_counted_without_its_setting():
    args = (np.array([30 * 86400.0]), np.array([5.0]), np.array([2048.0]), np.array([1e-5]), 1e12)
    nodes = dict(num_nodes=np.array([256.0]), rate_per_node_hour=np.array([1e-5]))
    bare = S.but(
        eval_time_fraction=0.0, straggler_sigma=0.0, planned_interruptions_per_node_hour=0.0, job_startup_s=0.0
    )
    base = goodput(*args, bare, **nodes).wall_s[0]
    for name, value in (
        ("eval_time_fraction", 0.01),
        ("data_stall_fraction", 0.01),
        ("straggler_sigma", 0.01),
        ("planned_interruptions_per_node_hour", 1e-4),
        ("job_startup_s", 3600.0),
    ):
        assert goodput(*args, bare.but(**{name: value}), **nodes).wall_s[0] > base, name
    g = goodput(*args, S, **nodes)
    assert g.planned_restarts[0] == pytest.approx(g.wall_s[0] * 256 * S.planned_interruptions_per_node_hour / 3600)
    assert g.fraction[0] == pytest.approx(args[0][0] / g.wall_s[0])


def test_a_restore_is_slower_than_the_save():
    g = goodput(np.array([86400.0]), np.array([1.0]), np.array([64.0]), np.array([1e-5]), 1e12, S)
    assert g.restart_s[0] == pytest.approx(S.restart_overhead_s + S.restore_over_save * g.write_s[0])

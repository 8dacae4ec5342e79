"""The two-type closed form against oracle routing at fixed cost per request (Done-when 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tiersim.analytic import (
    TwoType,
    cost_at_accuracy,
    estimate,
    kink,
    max_cost_gap,
    max_saving,
    oracle_frontier,
    savings_at_floor,
    static_frontier,
    upper_hull,
)
from tiersim.routing import TierInfo, prepare_workload
from tiersim.routing.frontier import lambda_sweep, static_split_frontier

EPS, DELTA, C_CHEAP, C_TOP = 0.02, 0.30, 1.0, 3.0


def two_type_tiers(eps=EPS, delta=DELTA):
    """Cheap and top tiers with per-class accuracy tables and fixed prices per request."""
    return [
        TierInfo("cheap", accuracy={"easy": 1 - eps, "hard": 1 - delta}, cost_weight=C_CHEAP),
        TierInfo("top", accuracy={"easy": 1.0, "hard": 1.0}, cost_weight=C_TOP),
    ]


def two_type_workload(p, n=200_000, seed=1, tiers=None):
    """A trace of n requests made two-type by prepare_workload."""
    df = pd.DataFrame({"input_tokens": np.ones(n, dtype=np.int32)})
    cfg = {"difficulty": {"kind": "two_type", "p_easy": p}}
    return prepare_workload(df, tiers or two_type_tiers(), cfg, np.random.default_rng(seed)).df


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_oracle_gap_matches_closed_form(p):
    tiers = two_type_tiers()
    df = two_type_workload(p, tiers=tiers)
    points = lambda_sweep(df, tiers, np.linspace(0.0, 0.5, 51), policy="oracle")
    gap, _ = max_cost_gap(upper_hull(points), static_split_frontier(df, tiers))
    dc = C_TOP - C_CHEAP
    assert gap == pytest.approx(max_saving(p, EPS, DELTA, dc), rel=0.01)
    p_hat = float((df["difficulty_class"] == "easy").mean())
    assert gap == pytest.approx(max_saving(p_hat, EPS, DELTA, dc), rel=1e-6)  # float32 columns


def test_oracle_sweep_has_the_kink():
    tiers = two_type_tiers()
    df = two_type_workload(0.6, n=50_000, tiers=tiers)
    points = lambda_sweep(df, tiers, np.linspace(0.0, 0.5, 51), policy="oracle")
    hull = upper_hull(points)
    p_hat = float((df["difficulty_class"] == "easy").mean())
    assert len(hull) == 3
    expected = kink(TwoType(p_hat, EPS, DELTA, dc=2.0, c0=1.0))
    assert hull[1] == pytest.approx(expected, rel=1e-6)


@given(
    p=st.floats(0.0, 1.0),
    eps=st.floats(0.0, 0.5),
    extra=st.floats(1e-3, 0.5),
    dc=st.floats(0.01, 10.0),
)
def test_closed_form_equals_frontier_gap(p, eps, extra, dc):
    # a cheap-tier loss below float resolution makes the frontiers one point in floats
    assume(p * eps + (1 - p) * (eps + extra) == 0 or p * eps + (1 - p) * (eps + extra) > 1e-9)
    m = TwoType(p, eps, eps + extra, dc=dc)
    gap, _ = max_cost_gap(oracle_frontier(m), static_frontier(m))
    if np.isnan(gap):  # zero loss: both frontiers are one point
        assert max_saving(p, eps, eps + extra, dc) == pytest.approx(0.0, abs=1e-12)
        return
    assert gap == pytest.approx(max_saving(p, eps, eps + extra, dc), rel=1e-6, abs=1e-9)


@given(p=st.floats(0.0, 1.0), eps=st.floats(0.0, 0.3), extra=st.floats(0.0, 0.5))
def test_oracle_frontier_dominates_static(p, eps, extra):
    m = TwoType(p, eps, eps + extra)
    acc = np.linspace(oracle_frontier(m)[0, 1], m.a_top, 17)
    assert np.all(cost_at_accuracy(oracle_frontier(m), acc) <= cost_at_accuracy(
        static_frontier(m), acc) + 1e-12)


def test_saving_vanishes_at_the_ends():
    assert max_saving(0.0, EPS, DELTA) == 0.0
    assert max_saving(1.0, EPS, DELTA) == 0.0
    assert max_saving(0.5, EPS, DELTA) > 0.0


def test_upper_hull_is_concave_and_drops_dominated_points():
    pts = np.array([[0, 0.5], [1, 0.8], [2, 0.85], [1.5, 0.6], [3, 0.9], [2.5, 0.95]])
    hull = upper_hull(pts)
    assert hull.tolist() == [[0, 0.5], [1, 0.8], [2.5, 0.95]]


def test_savings_at_floor_quotes_cheapest_uniform_meeting_floor():
    m = TwoType(0.5, 0.02, 0.3, dc=1.0)
    out = savings_at_floor(m, 0.99)  # exactly the kink
    assert out["oracle_cost"] == pytest.approx(0.5)
    assert out["uniform_cost"] == 1.0
    assert out["vs_uniform"] == pytest.approx(0.5)
    assert out["vs_static_split"] == pytest.approx(max_saving(0.5, 0.02, 0.3))
    assert savings_at_floor(m, 0.8)["uniform_cost"] == 0.0


def test_estimate_recovers_generator_parameters():
    tiers = two_type_tiers()
    df = two_type_workload(0.7, n=100_000, tiers=tiers)
    expected = df[["p_correct_cheap", "p_correct_top"]].to_numpy()
    realised = df[["correct_cheap", "correct_top"]].to_numpy()
    est = estimate(expected, realised, easy=(df["difficulty_class"] == "easy").to_numpy())
    assert est["p"] == pytest.approx(0.7, abs=0.01)
    assert est["eps"] == pytest.approx(EPS, abs=1e-6)
    assert est["delta"] == pytest.approx(DELTA, abs=1e-6)


def test_estimate_from_realised_labels_clips_negative_eps():
    expected = realised = np.array([[1, 1], [1, 0], [0, 1], [0, 0]], dtype=float)
    est = estimate(expected, realised)
    assert est["p"] == 0.75
    assert est["eps_raw"] == pytest.approx(-1 / 3)
    assert est["eps"] == 0.0
    assert est["delta"] == 1.0

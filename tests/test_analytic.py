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


def test_estimate_from_realised_labels_keeps_negative_eps():
    """Clipping eps to 0 put the all-cheap point at 0.25 where the cheap tier is right on half
    the requests, and printed a saving over a uniform fleet that already met the floor."""
    expected = realised = np.array([[1, 1], [1, 0], [0, 1], [0, 0]], dtype=float)
    est = estimate(expected, realised)
    assert est["p"] == 0.75
    assert est["eps"] == est["eps_raw"] == pytest.approx(-1 / 3)
    assert est["delta"] == 1.0
    m = TwoType(est["p"], est["eps"], est["delta"], a_top=est["a_top"])
    assert oracle_frontier(m)[0, 1] == pytest.approx(0.5)  # the cheap tier's own accuracy
    assert savings_at_floor(m, 0.5)["vs_uniform"] == 0.0


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60),
       st.floats(0.01, 10.0))
def test_frontier_from_labels_is_what_an_oracle_router_gets(labels, dc):
    """Model-free check on 0/1 labels: all cheap scores the cheap tier's accuracy; the kink is
    the router that sends to the top tier exactly the requests only it gets right, at that
    share of dc, and scores the better of the two per request."""
    y = np.array(labels, dtype=float)
    assume(y[:, 1].mean() >= y[:, 0].mean())
    est = estimate(y, y)
    m = TwoType(est["p"], est["eps"], est["delta"], dc=dc, c0=1.0, a_top=est["a_top"])
    only_top = (y[:, 1] > y[:, 0]).mean()
    assert oracle_frontier(m) == pytest.approx(np.array([
        (1.0, y[:, 0].mean()), (1.0 + only_top * dc, y.max(axis=1).mean()),
        (1.0 + dc, y[:, 1].mean())]), abs=1e-12)


@given(p=st.floats(0.0, 1.0), eps=st.floats(-1.0, 0.0, exclude_max=True),
       delta=st.floats(1e-3, 1.0), dc=st.floats(0.01, 10.0))
def test_closed_form_equals_frontier_gap_with_negative_eps(p, eps, delta, dc):
    loss = p * eps + (1 - p) * delta
    assume(loss > 1e-6)
    m = TwoType(p, eps, delta, dc=dc)
    gap, where = max_cost_gap(oracle_frontier(m), static_frontier(m))
    assert gap == pytest.approx(max_saving(p, eps, delta, dc), rel=1e-6, abs=1e-9)
    if gap > 1e-9:  # p = 0 has no gap anywhere
        assert where == pytest.approx(m.a_top)  # where the static split ends


def test_a_cheap_tier_better_on_average_is_outside_the_model():
    with pytest.raises(ValueError, match="the cheap tier is the more accurate on average"):
        TwoType(0.9, -0.2, 0.1)


@pytest.mark.parametrize("p_easy", [0.0, 1.0])
def test_estimate_with_one_class_keeps_the_cheap_tier_s_loss(p_easy):
    """With every request of one class the other class's loss was set to 0 and eps capped at
    it: on an all-easy workload where the cheap tier is right on 90% the model put its
    all-cheap point at the top tier's 100% and the kink (every request still on the cheap
    tier) at 1.0 for the cheap tier's cost."""
    tiers = [
        TierInfo("cheap", accuracy={"easy": 0.9, "hard": 0.5}, cost_weight=C_CHEAP),
        TierInfo("top", accuracy={"easy": 1.0, "hard": 0.8}, cost_weight=C_TOP),
    ]
    df = two_type_workload(p_easy, n=1_000, tiers=tiers)
    expected = df[["p_correct_cheap", "p_correct_top"]].to_numpy()
    est = estimate(expected, df[["correct_cheap", "correct_top"]].to_numpy(),
                   easy=(df["difficulty_class"] == "easy").to_numpy())
    loss = 0.1 if p_easy == 1.0 else 0.3
    assert est["p"] == p_easy
    assert est["eps"] == est["delta"] == pytest.approx(loss, abs=1e-6)
    m = TwoType(est["p"], est["eps"], est["delta"], dc=1.0, c0=1.0, a_top=est["a_top"])
    cheap_accuracy = expected[:, 0].mean()
    assert oracle_frontier(m)[0, 1] == pytest.approx(cheap_accuracy)
    assert kink(m)[1] == pytest.approx(cheap_accuracy if p_easy == 1.0 else est["a_top"])
    assert max_saving(m.p, m.eps, m.delta) == 0.0

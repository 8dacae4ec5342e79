"""Tests of tiersim.metrics: latency columns, percentiles, SLO attainment, cost both ways."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.metrics import (
    Slo,
    TierUsage,
    add_latencies,
    duration_s,
    percentile,
    summarize,
)


def make_requests(n: int = 4, **columns) -> pd.DataFrame:
    """Per-request rows with simple defaults; keyword arguments override whole columns."""
    arrival = np.arange(n, dtype=float)
    base = {
        "arrival_s": arrival,
        "first_token_s": arrival + 0.5,
        "finish_s": arrival + 1.5,
        "input_tokens": np.full(n, 100),
        "output_tokens": np.full(n, 11),
        "tier": np.zeros(n, dtype=int),
        "escalate_to": np.full(n, -1),
        "final_tier": np.zeros(n, dtype=int),
        "queue_s": np.zeros(n),
        "expected_accuracy": np.full(n, 0.9),
        "cost_usd": np.zeros(n),
    }
    base.update(columns)
    return add_latencies(pd.DataFrame(base))


def make_tier(**overrides) -> TierUsage:
    """A one-replica, one-GPU tier at $3.6/GPU-hour (= $0.001 per second)."""
    values = dict(name="t0", replicas=1, gpus_per_replica=1, cost_per_gpu_hour=3.6,
                  busy_s=2.0, kv_peak_blocks=50, num_blocks=100)
    values.update(overrides)
    return TierUsage(**values)


SLO = Slo(ttft_s=1.0, tpot_s=0.2)


def test_latencies_follow_their_definitions():
    df = make_requests(1)
    assert df["ttft_s"].iloc[0] == pytest.approx(0.5)
    assert df["e2e_s"].iloc[0] == pytest.approx(1.5)
    assert df["tpot_s"].iloc[0] == pytest.approx(1.0 / 10)


def test_one_token_output_has_no_tpot():
    df = make_requests(1, output_tokens=[1], finish_s=[0.5])
    assert math.isnan(df["tpot_s"].iloc[0])


def test_percentile_ignores_missing_and_is_none_when_empty():
    assert percentile(np.array([1.0, np.nan, 3.0]), 50) == pytest.approx(2.0)
    assert percentile(np.array([np.nan]), 99) is None


def test_duration_runs_to_last_finish_or_arrival():
    df = make_requests(3, finish_s=[1.0, np.nan, 2.5])
    assert duration_s(df) == pytest.approx(2.5)
    df = make_requests(3, finish_s=[1.0, np.nan, np.nan])
    assert duration_s(df) == pytest.approx(2.0)


def test_dropped_requests_count_as_missed_slo_and_zero_accuracy():
    df = make_requests(4, finish_s=[1.5, 2.5, np.nan, 4.5], first_token_s=[0.5, 1.5, np.nan, 3.5])
    s = summarize(df, [make_tier()], SLO)
    assert (s["requests"], s["completed"], s["dropped"]) == (4, 3, 1)
    assert s["slo_attainment"] == pytest.approx(0.75)
    assert s["accuracy"] == pytest.approx(0.9 * 3 / 4)


def test_slo_attainment_checks_both_latencies():
    df = make_requests(2, first_token_s=[0.5, 2.5], finish_s=[1.5, 3.5])  # 2nd: ttft 1.5 > 1.0
    assert summarize(df, [make_tier()], SLO)["slo_attainment"] == pytest.approx(0.5)
    df = make_requests(2, finish_s=[1.5, 4.5])  # 2nd: tpot 0.3 > 0.2
    assert summarize(df, [make_tier()], SLO)["slo_attainment"] == pytest.approx(0.5)


def test_provisioned_cost_is_replicas_gpus_price_duration():
    df = make_requests(4)  # duration 4.5 s
    tier = make_tier(replicas=3, gpus_per_replica=2)
    s = summarize(df, [tier], SLO, cost_model="provisioned")
    assert s["cost_usd"] == pytest.approx(3 * 2 * 0.001 * 4.5)
    assert s["gpu_hours"] == pytest.approx(6 * 4.5 / 3600)
    assert s["tiers"]["t0"]["utilization"] == pytest.approx(2.0 / (3 * 4.5))


def test_attributed_cost_is_busy_time_times_price():
    df = make_requests(4)
    s = summarize(df, [make_tier(busy_s=2.0, gpus_per_replica=2)], SLO)
    assert s["cost_usd"] == pytest.approx(2.0 * 2 * 0.001)
    assert s["cost"]["fixed_per_request_usd"] is None
    tokens = 4 * 11
    assert s["cost_per_1m_output_tokens"] == pytest.approx(s["cost_usd"] / tokens * 1e6)


def test_fixed_per_request_charges_every_pass():
    df = make_requests(3, escalate_to=[-1, 1, -1], final_tier=[0, 1, 0])
    tiers = [make_tier(cost_per_request_usd=0.01), make_tier(name="t1", cost_per_request_usd=0.1)]
    s = summarize(df, tiers, SLO, cost_model="fixed_per_request")
    assert s["cost_usd"] == pytest.approx(3 * 0.01 + 0.1)
    assert s["tiers"]["t1"]["requests"] == 1
    assert s["tiers"]["t0"]["passes"] == 3


def test_unknown_cost_model_is_refused():
    with pytest.raises(ValueError, match="cost_model"):
        summarize(make_requests(1), [make_tier()], SLO, cost_model="free")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0.01, 5), st.integers(1, 50),
                          st.booleans(), st.integers(0, 1)), min_size=1, max_size=30))
def test_summary_invariants(rows):
    arrival = np.sort([r[0] for r in rows])
    pairs = zip(arrival, rows, strict=True)
    finish = np.array([a + r[1] if not r[3] else np.nan for a, r in pairs])
    tier = np.array([r[4] for r in rows])
    df = make_requests(len(rows), arrival_s=arrival, first_token_s=(arrival + finish) / 2,
                       finish_s=finish, output_tokens=[r[2] for r in rows], tier=tier,
                       final_tier=tier)
    s = summarize(df, [make_tier(), make_tier(name="t1")], SLO)
    assert s["completed"] + s["dropped"] == s["requests"] == len(rows)
    assert sum(t["requests"] for t in s["tiers"].values()) == len(rows)
    assert 0.0 <= s["slo_attainment"] <= 1.0
    for key in ("ttft", "tpot", "e2e"):
        lo, hi = s[f"{key}_p50_s"], s[f"{key}_p99_s"]
        assert (lo is None) == (hi is None)
        assert lo is None or lo <= hi + 1e-12

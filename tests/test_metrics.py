"""Tests of tiersim.metrics (latency columns, percentiles, SLO attainment) and the cost ledger
(tiersim.costs: provisioned, attributed, fixed per request)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim import costs
from tiersim.metrics import (
    Slo,
    add_latencies,
    duration_s,
    percentile,
    request_stats,
    utilization,
)


def tier_stats(requests: pd.DataFrame, index: int):
    """Tier ``index``'s figures as a run's summary makes them (:func:`tiersim.summary.
    _tier_stats`, over the rows whose ``final_tier`` it is)."""
    from tiersim.summary import _tier_stats

    return _tier_stats(requests["final_tier"].to_numpy() == index,
                       requests["ttft_s"].to_numpy(), requests["tpot_s"].to_numpy())


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


def make_tier(name: str = "t0", replicas: int = 1, gpus: int = 1, price: float = 3.6,
              per_request: float | None = None):
    """A built tier as the ledger sees it: ``replicas`` engine replicas of ``gpus`` GPUs at
    ``price`` $/GPU-hour (3.6 = $0.001 per GPU-second)."""
    config = SimpleNamespace(cost_per_request_usd=per_request)
    return SimpleNamespace(name=name, engine_replicas=replicas, gpus=replicas * gpus,
                           usd_per_replica_second=gpus * price / 3600.0, config=config)


def make_result(first, final=None, busy=None, escalated=None, dropped=None, names=("t0",)):
    """An engine result with the fields the ledger reads."""
    first = np.asarray(first)
    final = first if final is None else np.asarray(final)
    n = len(first)
    return SimpleNamespace(
        first_tier=first, final_tier=final,
        escalated=np.zeros(n, bool) if escalated is None else np.asarray(escalated),
        dropped=np.zeros(n, bool) if dropped is None else np.asarray(dropped),
        gpu_s_first=np.ones(n), gpu_s_final=np.zeros(n),
        busy_s={name: [b] for name, b in zip(names, busy or [2.0] * len(names), strict=True)})


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
    s = request_stats(df, SLO)
    assert (s.requests, s.completed, s.dropped) == (4, 3, 1)
    assert s.slo_attainment == pytest.approx(0.75)
    assert s.accuracy == pytest.approx(0.9 * 3 / 4)


def test_slo_attainment_checks_both_latencies():
    df = make_requests(2, first_token_s=[0.5, 2.5], finish_s=[1.5, 3.5])  # 2nd: ttft 1.5 > 1.0
    assert request_stats(df, SLO).slo_attainment == pytest.approx(0.5)
    df = make_requests(2, finish_s=[1.5, 4.5])  # 2nd: tpot 0.3 > 0.2
    assert request_stats(df, SLO).slo_attainment == pytest.approx(0.5)


def test_provisioned_cost_is_replicas_gpus_price_duration():
    fleet = SimpleNamespace(tiers=[make_tier(replicas=3, gpus=2)])
    book = costs.ledger("provisioned", fleet, make_result([0, 0, 0, 0]), duration_s=4.5)
    assert book.headline_usd == pytest.approx(3 * 2 * 0.001 * 4.5)
    assert book.attributed_usd == pytest.approx(2.0 * 2 * 0.001)  # shown beside it
    assert utilization(2.0, 3, 4.5) == pytest.approx(2.0 / (3 * 4.5))


def test_attributed_cost_is_busy_time_times_price():
    fleet = SimpleNamespace(tiers=[make_tier(gpus=2)])
    book = costs.ledger("attributed", fleet, make_result([0, 0, 0, 0], busy=[2.0]), 4.5)
    assert book.headline_usd == pytest.approx(2.0 * 2 * 0.001)
    assert book.total("fixed_per_request") is None  # no price per request


def test_fixed_per_request_charges_every_pass():
    fleet = SimpleNamespace(tiers=[make_tier(per_request=0.01),
                                   make_tier(name="t1", per_request=0.1)])
    result = make_result([0, 0, 0], final=[0, 1, 0], escalated=[False, True, False],
                         busy=[1.0, 1.0], names=("t0", "t1"))
    book = costs.ledger("fixed_per_request", fleet, result, 4.5)
    assert book.headline_usd == pytest.approx(3 * 0.01 + 0.1)
    assert book.tiers["t0"].passes == 3 and book.tiers["t1"].passes == 1
    assert costs.request_costs("fixed_per_request", fleet, result, 4.5).sum() == pytest.approx(
        book.headline_usd)
    df = make_requests(3, final_tier=[0, 1, 0])
    assert tier_stats(df, 1).requests == 1


def test_unknown_cost_model_is_refused():
    fleet = SimpleNamespace(tiers=[make_tier()])
    with pytest.raises(ValueError, match="cost_model"):
        costs.ledger("free", fleet, make_result([0]), 1.0)


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
    s = request_stats(df, SLO)
    assert s.completed + s.dropped == s.requests == len(rows)
    assert sum(tier_stats(df, k).requests for k in (0, 1)) == len(rows)
    assert 0.0 <= s.slo_attainment <= 1.0
    for key in ("ttft", "tpot", "e2e"):
        lo, hi = getattr(s, f"{key}_p50_s"), getattr(s, f"{key}_p99_s")
        assert (lo is None) == (hi is None)
        assert lo is None or lo <= hi + 1e-12

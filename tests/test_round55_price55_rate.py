"""Round 55 (price55): the router's price reads a routed table's arrival rate as its ``n - 1``
gaps over their span (:func:`tiersim.inputs.arrival_rate`, :meth:`tiersim.inputs.Arrivals.of`),
not its ``n`` rows over it.

The span runs from the first arrival to the last, so the first arrival opens it and is not
one of the gaps it measures: ``n`` arrivals evenly ``d`` apart span ``(n - 1) d`` and arrive
``1 / d`` a second; ``n / span`` read that ``n / (n - 1)`` high (0.3 % on tiny's 317
requests, 50 % on three). At Poisson arrivals ``span / (n - 1)`` is the unbiased estimate of
the mean gap (the span is the sum of ``n - 1`` exponential gaps) and its reciprocal the
maximum-likelihood rate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tiersim.inputs import Arrivals, arrival_rate, pooled_busy_batch, price_sample


def _table(arrival: np.ndarray) -> pd.DataFrame:
    """A routed table of requests arriving at ``arrival``."""
    n = len(arrival)
    return pd.DataFrame({"input_tokens": np.full(n, 100), "output_tokens": np.full(n, 10),
                         "arrival_s": np.asarray(arrival, dtype=np.float64)})


@pytest.mark.parametrize("n", [2, 3, 10, 317, 5000])
def test_evenly_spaced_arrivals_read_their_own_rate(n):
    """``n`` arrivals 0.4 s apart, from 12 s: 2.5 a second whatever ``n`` (by rows over the
    span: ``2.5 n / (n - 1)``, 5 a second at two arrivals)."""
    arrival = 12.0 + 0.4 * np.arange(n)
    assert arrival_rate(_table(arrival)) == pytest.approx(2.5, rel=1e-12)
    assert Arrivals.of(arrival).rate == pytest.approx(2.5, rel=1e-12)


def test_the_replicas_sharing_the_arrivals_are_still_the_fleet_s():
    """The price's rate a replica is the table's rate over the fleet's replicas, and the
    count (:meth:`Arrivals.busy_batch`) reads the replicas as the table's rate over it: with
    both the same estimate, 4 replicas are 4 whether the table has 150 arrivals (the closed
    form) or 400 (the count)."""
    for n in (150, 400):
        arrival = np.sort(np.random.default_rng(n).uniform(0.0, 100.0, n))
        mix = price_sample(_table(arrival), seed=0, replicas=4)
        assert mix.arrivals.rate / mix.rate == pytest.approx(4.0, rel=1e-12)
    five = _table(np.array([0.0, 1.0, 3.0, 6.0, 10.0]))  # 4 gaps over 10 s
    mix = price_sample(five, seed=0, replicas=2)
    assert mix.rate == pytest.approx(0.2) and mix.arrivals.times is None
    assert mix.arrivals.busy_batch(5.0, mix.rate) == pooled_busy_batch(1.0, 2)


def test_at_poisson_arrivals_the_mean_gap_is_unbiased():
    """20,000 tables of 5 Poisson arrivals at 2 a second (seed 55): the span over its 4 gaps
    averages 0.5 s (to 1 %), where the span over 5 rows averages 0.4 s (20 % short, so the
    rate read 25 % high)."""
    rng = np.random.default_rng(55)
    gaps = rng.exponential(0.5, size=(20_000, 4))
    span = gaps.sum(axis=1)
    assert float(np.mean(span / 4)) == pytest.approx(0.5, rel=0.01)
    assert float(np.mean(span / 5)) == pytest.approx(0.4, rel=0.01)
    arrival = np.concatenate(([0.0], np.cumsum(gaps[0])))
    assert arrival_rate(_table(arrival)) == pytest.approx(4 / span[0], rel=1e-12)

"""Round 26: the accuracy interval of fractional per-request accuracies (the expected basis).

The percentile bootstrap it was held the true mean in 78.5-87.8 % of samples of 10 of three of
the benchmark's four shapes (78.5 % of the default job's values) and 91.5-93.5 % of samples of
30 of all four, gave [x, x] to a sample whose values were all x, and NaN to one request;
``benchmarks/ci_coverage.py`` prints the full table (docs/metrics.md has it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tiersim.routing.metrics import accuracy_ci, score
from tiersim.routing.types import TierInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from ci_coverage import SHAPES  # noqa: E402  (the benchmark's shapes, beside the tests)

Z95 = 1.959963984540054


def _interval(values) -> tuple[float, float]:
    """``router.accuracy_ci95`` of one tier's per-request expected accuracies ``values``."""
    values = np.asarray(values, dtype=np.float64)
    df = pd.DataFrame({"p_correct_t": values, "correct_t": (values >= 0.5).astype(float)})
    lo, hi = score(df, np.zeros(len(values), np.int64), tiers=[TierInfo("t")])["accuracy_ci95"]
    return lo, hi


def _coverage(shape: str, n: int, draws: int) -> float:
    """Share of ``draws`` seeded samples of ``n`` from ``shape`` whose interval holds its mean
    (:func:`accuracy_ci`, what :func:`score` reports, called directly: 60 times faster)."""
    draw, mean = SHAPES[shape]
    samples = draw(np.random.default_rng(26), (draws, n))
    held = [lo <= mean <= hi for lo, hi in map(accuracy_ci, samples)]
    return float(np.mean(held))


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("n, least", [(10, 0.90), (30, 0.93)])
def test_interval_of_fractional_accuracies_holds_the_mean_in_small_samples(shape, n, least):
    """2,000 seeded samples a cell (a standard error under 0.7 pp). The bootstrap failed this
    test (1,000 samples a cell, through ``score``): it held the mean in 77.3 % (the default
    job's values), 88.0 % (bimodal) and 89.7 % (Beta(8, 2)) of samples of 10, and 90.8 % and
    92.6 % of samples of 30; the interval now holds it in at least 93 % at n = 10 and 95 % at
    30 (benchmarks/ci_coverage.py, another seed)."""
    assert _coverage(shape, n, 2000) >= least


@pytest.mark.parametrize("shape", list(SHAPES))
def test_interval_of_many_fractional_accuracies_is_not_needlessly_wide(shape):
    """At n = 1,000 (1,000 samples) a 95 % interval should hold the mean about 95 % of the
    time, not always (Wilson's interval of the mean, which takes the largest variance scores
    in [0, 1] with that mean can have, held Beta(8, 2)'s in 100 % of samples at 3.3 times this
    width)."""
    assert 0.93 <= _coverage(shape, 1000, 1000) <= 0.975


@pytest.mark.parametrize("values", [[0.95], [0.8] * 10, [0.2] * 3, [0.999] * 30])
def test_one_value_or_values_all_alike_give_an_interval_around_them(values):
    """One request gave NaN (no interval, so no floor judgement); ten at 0.8 gave [0.8, 0.8],
    a zero-width interval that judged a floor of 0.8 met by its low end."""
    lo, hi = _interval(values)
    assert 0.0 <= lo < values[0] < hi <= 1.0


def test_no_request_gives_no_interval():
    lo, hi = accuracy_ci(np.array([]))
    assert lo != lo and hi != hi


def test_zero_one_values_keep_wilsons_interval_and_fractional_ones_are_agresti_coulls():
    """On 0/1 values the fractional interval is Agresti and Coull's (p~ = (k + z^2/2) /
    (n + z^2), p~ +- z sqrt(p~ (1 - p~) / (n + z^2))); 0/1 values keep Wilson's."""
    from tiersim.routing.metrics import bounded_mean_ci, wilson_ci

    k, n = 17, 20
    total = n + Z95**2
    centre = (k + Z95**2 / 2) / total
    half = Z95 * np.sqrt(centre * (1 - centre) / total)
    values = np.r_[np.ones(k), np.zeros(n - k)]
    assert bounded_mean_ci(values) == pytest.approx((centre - half, centre + half))
    assert accuracy_ci(values) == pytest.approx(wilson_ci(k, n))


def test_interval_is_deterministic_and_draws_no_random_numbers():
    """The bootstrap's interval depended on the run's scoring generator; this one is a
    function of the values alone (the same values twice give the same bits)."""
    values = np.random.default_rng(3).beta(8, 2, 5000)
    state = np.random.get_state()[1].copy()
    assert accuracy_ci(values) == accuracy_ci(values.copy())
    assert (np.random.get_state()[1] == state).all()

"""Round 25, memory: the load path's lower-memory forms give the same values as before."""

from __future__ import annotations

import numpy as np
import pytest

from tiersim.trace import units


def _median_gap_copied(t: np.ndarray) -> float | None:
    """The median of the positive gaps as it was computed before (gaps copied out)."""
    gaps = np.diff(t.astype(np.float64))
    gaps = gaps[gaps > 0]
    return float(np.median(gaps)) if len(gaps) else None


@pytest.mark.parametrize("seed", range(20))
def test_median_gap_in_place_matches_copied(seed):
    """Ties (gaps of 0), unsorted times (negative gaps), odd and even counts of positive gaps,
    and all-equal times give the median the copied form gave."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        n = int(rng.integers(2, 60))
        t = np.round(rng.random(n) * rng.choice([1.0, 10.0, 1e6]), int(rng.integers(0, 3)))
        if rng.random() < 0.7:
            t = np.sort(t)
        if rng.random() < 0.1:
            t = np.full(n, 7.0)
        assert units._median_gap(t.copy()) == _median_gap_copied(t)


def test_median_gap_leaves_times_unchanged():
    """The gaps are reordered in place, never the times they are taken from."""
    t = np.array([0.0, 0.0, 5.0, 5.0, 6.0, 100.0])
    before = t.copy()
    assert units._median_gap(t) == 5.0
    np.testing.assert_array_equal(t, before)


@pytest.mark.parametrize("scale", [1e-300, 1e-3, 1.0, 1e6, 1e300])
def test_std_in_place_matches_numpy(scale):
    """The in-place population std of the arrival gaps is numpy's ``std``, to the bit."""
    from tiersim.trace.stats import _std_in_place

    rng = np.random.default_rng(7)
    for n in (2, 3, 17, 1000, 100_001):
        gaps = np.diff(np.sort(rng.random(n + 1) * scale))
        with np.errstate(over="ignore"):  # 1e300 squared is inf, in both
            expected = gaps.std()
            assert _std_in_place(gaps.copy(), gaps.mean()) == expected


def test_seconds_note_without_gaps_where_they_are_surely_short():
    """Arrivals a second apart over two days are told short by their count alone (no note),
    arrivals two minutes apart still get the note, and unsorted times take the median."""
    close = np.concatenate([np.arange(200_000, dtype=np.float64), [200_000.0 + 86_400]])
    assert units._gaps_surely_short(close, float(close[-1]), units.SLOW_GAP_S)
    assert units.seconds_note("arrival_s", close) == []
    apart = np.arange(2_000, dtype=np.float64) * 120.0
    assert not units._gaps_surely_short(apart, float(apart[-1]), units.SLOW_GAP_S)
    assert units.seconds_note("arrival_s", apart)
    assert not units._gaps_surely_short(close[::-1], 0.0, units.SLOW_GAP_S)

"""Synthetic Poisson arrivals over real token lengths."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.workload.synthetic import poisson_arrivals, poisson_times, resample


def make_table(n: int = 5, **extra) -> pd.DataFrame:
    """A small canonical-looking table with distinct (input, output) pairs."""
    df = pd.DataFrame({
        "request_id": np.arange(n, dtype=np.int64) + 100,
        "arrival_s": np.arange(n, dtype=float),
        "input_tokens": (np.arange(n) + 1).astype(np.int32) * 10,
        "output_tokens": (np.arange(n) + 1).astype(np.int32),
    })
    for name, values in extra.items():
        df[name] = values
    return df


def test_resample_shape_and_dtypes():
    out = resample(make_table(), 1000, 4.0, np.random.default_rng(0))
    assert list(out.columns) == ["request_id", "arrival_s", "input_tokens", "output_tokens"]
    assert out["request_id"].tolist() == list(range(1000))
    assert out["input_tokens"].dtype == np.int32 and out["output_tokens"].dtype == np.int32
    assert out["arrival_s"].iloc[0] == 0.0 and (np.diff(out["arrival_s"]) >= 0).all()


def test_resample_draws_whole_rows():
    out = resample(make_table(), 2000, 4.0, np.random.default_rng(1))
    assert (out["input_tokens"] == out["output_tokens"] * 10).all()
    assert set(out["output_tokens"]) == {1, 2, 3, 4, 5}  # all rows drawn, with replacement


def test_resample_rate_and_burstiness_are_poisson():
    out = resample(make_table(), 20000, 8.0, np.random.default_rng(2))
    gaps = np.diff(out["arrival_s"])
    # mean gap 1/8 s; its standard error is (1/8)/sqrt(n) = 0.0009, so 5 sigma is 0.0045
    assert abs(gaps.mean() - 0.125) < 0.0045
    assert abs(gaps.std() / gaps.mean() - 1.0) < 0.05


def test_resample_is_deterministic_per_seed():
    a = resample(make_table(), 50, 2.0, np.random.default_rng(7))
    b = resample(make_table(), 50, 2.0, np.random.default_rng(7))
    c = resample(make_table(), 50, 2.0, np.random.default_rng(8))
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_resample_keeps_request_columns_and_drops_session_ones():
    df = make_table(3, task_type=pd.Categorical(["code", "conv", "code"]),
                    difficulty=np.float32([0.1, 0.5, 0.9]), session_id=[1, 1, 2],
                    step=[0, 1, 0], prefix_hashes=[np.array([1]), np.array([2]), np.array([3])])
    out = resample(df, 30, 1.0, np.random.default_rng(3))
    assert "session_id" not in out and "step" not in out and "prefix_hashes" not in out
    assert isinstance(out["task_type"].dtype, pd.CategoricalDtype)
    pairs = dict(zip(df["output_tokens"], df["difficulty"], strict=True))
    assert all(pairs[o] == d for o, d in zip(out["output_tokens"], out["difficulty"],
                                             strict=True))


def test_poisson_arrivals_keeps_every_row_in_order():
    df = make_table(6)
    out = poisson_arrivals(df, 3.0, np.random.default_rng(4))
    assert out["input_tokens"].tolist() == df["input_tokens"].tolist()
    assert out["request_id"].tolist() == list(range(6))


@pytest.mark.parametrize("n,rate,message", [
    (0, 1.0, "n must be >= 1, got 0"),
    (5, 0.0, "rate_rps must be a finite number > 0, got 0.0"),
    (5, float("inf"), "rate_rps must be a finite number > 0, got inf"),
])
def test_bad_arguments(n, rate, message):
    with pytest.raises(ValueError) as info:
        resample(make_table(), n, rate, np.random.default_rng(0))
    assert str(info.value) == message


def test_empty_table():
    with pytest.raises(ValueError, match="empty table"):
        resample(make_table(0), 3, 1.0, np.random.default_rng(0))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 300), st.floats(0.01, 1e4), st.integers(0, 2**32 - 1))
def test_poisson_times_invariants(n, rate, seed):
    t = poisson_times(n, rate, np.random.default_rng(seed))
    assert len(t) == n and t[0] == 0.0 and (np.diff(t) >= 0).all()

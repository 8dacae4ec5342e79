"""Synthetic arrivals: Poisson request streams whose token lengths come from a real table.

Arrivals are a Poisson process at ``rate_rps``: exponential gaps with mean 1/rate, the first
request at time 0. Per-request columns (token counts, task_type, difficulty, correct_*, feat_*)
travel with their row; session structure (``session_id``, ``step``) and ``prefix_hashes`` are
dropped, because a resampled stream repeats rows and would fake sessions and cache hits.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DROPPED = ("request_id", "arrival_s", "session_id", "step", "prefix_hashes")


def poisson_times(n: int, rate_rps: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` arrival times (s) of a Poisson process at ``rate_rps``, starting at 0."""
    if not (rate_rps > 0 and np.isfinite(rate_rps)):
        raise ValueError(f"rate_rps must be a finite number > 0, got {rate_rps!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n!r}")
    gaps = rng.exponential(1.0 / rate_rps, size=n - 1)
    return np.concatenate(([0.0], np.cumsum(gaps)))


def _with_arrivals(rows: pd.DataFrame, arrival_s: np.ndarray) -> pd.DataFrame:
    keep = [c for c in rows.columns if c not in DROPPED]
    out = rows[keep].reset_index(drop=True)
    out.insert(0, "arrival_s", arrival_s)
    out.insert(0, "request_id", np.arange(len(out), dtype=np.int64))
    out["input_tokens"] = out["input_tokens"].astype(np.int32)
    out["output_tokens"] = out["output_tokens"].astype(np.int32)
    return out


def resample(df: pd.DataFrame, n: int, rate_rps: float, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` requests whose rows are drawn from ``df`` with replacement, Poisson at ``rate_rps``.

    ``df`` needs ``input_tokens`` and ``output_tokens`` (a trace or :func:`load_lengths`).
    Returns the canonical table, ``request_id`` 0..n-1.
    """
    if len(df) == 0:
        raise ValueError("cannot resample an empty table")
    times = poisson_times(n, rate_rps, rng)
    rows = df.iloc[rng.integers(0, len(df), size=n)]
    return _with_arrivals(rows, times)


def poisson_arrivals(df: pd.DataFrame, rate_rps: float, rng: np.random.Generator) -> pd.DataFrame:
    """Every row of ``df`` once, in order, at Poisson arrival times at ``rate_rps``."""
    if len(df) == 0:
        raise ValueError("cannot give arrivals to an empty table")
    return _with_arrivals(df, poisson_times(len(df), rate_rps, rng))
